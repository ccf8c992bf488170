#!/usr/bin/env bash
# test-summary.sh [--strict] [DIR] — what `make test` skipped, and why.
#
# Reads the logs `make test` leaves in DIR (default test-artifacts/logs):
# go.log (go test -v: "--- SKIP: TestX" after the test's last log line, its
# reason), *.log of node --test (TAP: "ok 3 - name # SKIP reason") and of
# pytest -rs ("SKIPPED [1] file.py:12: reason", also inside go.log, where the
# e2e tests log the Python SDK's run).
#
# Skips are of two kinds: opt-in tests, skipped unless asked for
# (measurements and the scheduling simulation: PARLEY_MEASURE=1,
# PARLEY_SIMULATE=1), and tests whose dependency is missing (a scale-mode
# server, an SDK, Chromium). With --strict (CI), any skip of the second kind
# is an error. TEST_SKIP_OPT_IN overrides the pattern (an ERE matched against
# the reason) that tells the opt-in ones.
set -euo pipefail

strict=0
if [ "${1:-}" = "--strict" ]; then
  strict=1
  shift
fi
dir=${1:-test-artifacts/logs}
optin=${TEST_SKIP_OPT_IN:-'PARLEY_MEASURE|PARLEY_SIMULATE|^measurement$'}

if [ ! -d "$dir" ]; then
  echo "test-summary: no logs in $dir (run make test)" >&2
  exit 1
fi

# One line per skip: where <TAB> test <TAB> reason.
skips() {
  if [ -f "$dir/go.log" ]; then
    awk '
      /^=== (RUN|CONT|NAME|PAUSE) / { cur = $3; next }
      /^ *--- SKIP: / {
        name = $3
        pending[++n] = name "\t" (name in last ? last[name] : "(no reason given)")
        next
      }
      /^    [^ ]+\.go:[0-9]+: / {
        line = $0
        sub(/^ +[^ ]+\.go:[0-9]+: /, "", line)
        if (cur != "") last[cur] = line
      }
      /^(ok|FAIL)[ \t]+[^ \t]+/ {
        for (i = 1; i <= n; i++) print "go " $2 "\t" pending[i]
        n = 0
      }
    ' "$dir/go.log"
  fi
  for f in "$dir"/*.log; do
    [ -f "$f" ] || continue
    suite=$(basename "$f" .log)
    # node --test (TAP)
    sed -n 's/^ *ok [0-9][0-9]* - \(.*\) # SKIP *\(.*\)$/'"$suite"'\t\1\t\2/p' "$f"
    # pytest -rs
    sed -n 's/^.*SKIPPED \[[0-9][0-9]*\] \([^ ]*\): \(.*\)$/'"$suite"' (pytest)\t\1\t\2/p' "$f"
  done
}

all=$(skips | sort -u)
if [ -z "$all" ]; then
  echo "=== test summary: nothing was skipped"
  exit 0
fi
wanted=$(printf '%s\n' "$all" | awk -F '\t' -v re="$optin" '$3 !~ re')
opted=$(printf '%s\n' "$all" | awk -F '\t' -v re="$optin" '$3 ~ re')

count() { if [ -z "$1" ]; then echo 0; else printf '%s\n' "$1" | wc -l | tr -d ' '; fi; }
# show prints skips grouped by suite and reason: the number of tests, the
# top-level names (subtests folded into their parent), then the reason.
show() {
  printf '%s\n' "$1" | awk -F '\t' '
    {
      where = $1
      sub(/github\.com\/parleyhq\/parley\//, "", where)
      key = where "\t" $3
      if (!(key in n)) order[++k] = key
      n[key]++
      top = $2
      if (where ~ /^go /) sub(/\/.*/, "", top)
      if (!((key, top) in seen)) {
        seen[key, top] = 1
        if (m[key]++) names[key] = names[key] ", " top
        else names[key] = top
      }
    }
    END {
      for (i = 1; i <= k; i++) {
        split(order[i], f, "\t")
        printf "  %s: %d %s (%s)\n      %s\n", f[1], n[order[i]], n[order[i]] == 1 ? "test" : "tests", names[order[i]], f[2]
      }
    }'
}

echo
echo "=== test summary: $(count "$wanted") skipped for a missing dependency, $(count "$opted") opt-in tests not asked for"
if [ -n "$wanted" ]; then
  echo "skipped for a missing dependency (see README, Development):"
  show "$wanted"
fi
if [ -n "$opted" ]; then
  echo "opt-in, not asked for:"
  show "$opted"
fi
if [ "$strict" = 1 ] && [ -n "$wanted" ]; then
  echo "test-summary: $(count "$wanted") tests skipped for a missing dependency; in CI every one must run" >&2
  exit 1
fi
