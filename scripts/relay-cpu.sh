#!/usr/bin/env bash
# Where a relay's CPU goes, the kernel's part included, against the floor:
# parley bench relay at one load on the direct path (gateway → mock) and on
# the floor (bench proxy: one read and one write a token, nothing else),
# with perf sampling the gateway, then the proxy, for SAMPLE seconds in the middle
# of each one's run. Each process's CPU-s per 1,000 answers (the bench's own
# figure, from /proc) is split by the share of perf's samples in each part:
# the kernel switching and waking threads, the rest of the kernel (system
# calls, TCP), Go's runtime, Go's net, HTTP and bufio, SQLite, Parley, the
# rest.
# pprof shows only part of this: of the CPU /proc counts for the gateway, its
# profile saw about three quarters here, the kernel only inside system calls.
#
#   scripts/relay-cpu.sh
#
# Environment: BIN (a built parley; default: built here), DELAY (between
# tokens, 20ms), STREAMS (50), ANSWERS (per path, 3000), SAMPLE (seconds
# sampled, 20). Needs perf, allowed to sample processes (root, or
# kernel.perf_event_paranoid at most 1). Loopback only; it stops what it
# starts. Exits non-zero when the bench had failures or perf could not run.
set -euo pipefail
cd "$(dirname "$0")/.."

DELAY=${DELAY:-20ms} STREAMS=${STREAMS:-50} ANSWERS=${ANSWERS:-3000} SAMPLE=${SAMPLE:-20}
command -v perf >/dev/null || { echo "relay-cpu: perf is not installed" >&2; exit 1; }
tmp=$(mktemp -d)
bench=""
trap '[ -z "$bench" ] || kill "$bench" 2>/dev/null || true; rm -rf "$tmp"' EXIT

bin=${BIN:-$tmp/parley}
[ -n "${BIN:-}" ] || go build -o "$bin" ./server/cmd/parley

"$bin" bench relay --paths direct,proxy --token-delay "$DELAY" --streams "$STREAMS" \
  --answers "$ANSWERS" --trials 1 >"$tmp/table" 2>"$tmp/progress" &
bench=$!

# sample RUN NAME OUT: when the bench's progress reaches RUN's first trial,
# perf samples the bench's child whose command line has NAME into OUT.data.
sample() {
  local line=$1 name=$2 pid=""
  until grep -q "trial 1: $line\$" "$tmp/progress"; do
    kill -0 "$bench" 2>/dev/null || { cat "$tmp/progress" >&2; echo "relay-cpu: the bench ended early" >&2; exit 1; }
    sleep 0.5
  done
  sleep 3 # past the run's first streams
  pid=$(pgrep -P "$bench" -f -- "$name" | head -1)
  [ -n "$pid" ] || { echo "relay-cpu: no process '$name' under the bench" >&2; exit 1; }
  perf stat -x, -o "$tmp/$3.stat" -e task-clock,context-switches,syscalls:sys_enter_nanosleep,syscalls:sys_enter_futex \
    -p "$pid" -- sleep "$SAMPLE" 2>"$tmp/$3.stat-err" &
  local stat=$!
  perf record -q -e cpu-clock -F 1999 -o "$tmp/$3.data" -p "$pid" -- sleep "$SAMPLE" >/dev/null 2>"$tmp/$3.perf-err" ||
    { cat "$tmp/$3.perf-err" >&2; exit 1; }
  wait "$stat" || { cat "$tmp/$3.stat-err" >&2; exit 1; }
}
sample 'relay\[direct\]' ' serve ' gateway
sample 'proxy' ' bench proxy ' proxy
wait "$bench" || { cat "$tmp/table"; echo "relay-cpu: the bench failed" >&2; bench=""; exit 1; }
bench=""
cat "$tmp/table"

# The bench's CPU-s per 1,000 answers of the process in the gateway's place.
cpu() { awk -v p="$1" '$1 == p && $2 ~ /^[0-9]+$/ { print $8 }' "$tmp/table"; }

# shares FILE: the part each group has of FILE's samples, "group<TAB>percent".
shares() {
  perf report -i "$1" --stdio --no-children --sort dso,sym -g none --percent-limit 0 2>/dev/null |
    awk '$1 ~ /%$/ {
      p = $1; sub(/%/, "", p); kind = $3; s = $4
      if (kind == "[k]") g = (s ~ /^(finish_task_switch|_raw_spin_unlock_irq|__schedule|schedule|try_to_wake_up|ttwu_|__switch_to|switch_mm|enqueue_task|dequeue_task|pick_next_task|update_curr|__x64_sys_futex|futex_)/) ? "kernel: switching and waking threads" : "kernel: system calls, TCP, the rest"
      else if (s ~ /parleyhq\/parley/) g = "Parley"
      else if (s ~ /^(modernc\.org|database\/sql)/) g = "SQLite (modernc, database/sql)"
      else if (s ~ /^(runtime\.|internal\/runtime\/|gcWriteBarrier|aeshash|memeqbody|indexbyte|cmpbody|countbody)/) g = "Go runtime: scheduler, memory, GC"
      else if (s ~ /^(net\.|net\/http|internal\/poll\.|bufio\.|syscall\.|io\.)/) g = "Go net, net/http, bufio, poll"
      else g = "other Go code, vdso"
      t[g] += p
    } END { for (g in t) printf "%s\t%.2f\n", g, t[g] }'
}
shares "$tmp/gateway.data" >"$tmp/gateway.shares"
shares "$tmp/proxy.data" >"$tmp/proxy.shares"
gw=$(cpu 'relay[direct]') px=$(cpu proxy)
echo
echo "Where the CPU goes (perf, ${SAMPLE} s of each run; CPU-s per 1,000 answers, the bench's figure split by perf's shares)"
printf "%-40s %9s %9s %9s\n" "" gateway floor gap
awk -F'\t' -v gw="$gw" -v px="$px" '
  FNR == 1 { f++ }
  { v[$1, f] = $2; groups[$1] = 1 }
  END { for (g in groups) { a = v[g, 1] * gw / 100; b = v[g, 2] * px / 100; printf "%-40s %9.2f %9.2f %+9.2f\n", g, a, b, a - b } }' \
  "$tmp/gateway.shares" "$tmp/proxy.shares" | sort -k1,1
awk -v gw="$gw" -v px="$px" 'BEGIN { printf "%-40s %9.2f %9.2f %+9.2f\n", "all", gw, px, gw - px }'

# The same seconds counted (perf stat): the CPU used, and per CPU-second the
# threads switched in, the runtime monitor's naps (nanosleep) and the futex
# calls that park and wake threads.
echo
echo "Counted over the same ${SAMPLE} s (perf stat): CPU, and per CPU-second switches, nanosleeps, futex calls"
printf "%-10s %9s %12s %12s %12s\n" "" CPU-s switches nanosleeps futex
for p in gateway proxy; do
  awk -F, -v p="$p" '
    $3 == "task-clock" { cpu = $1 / 1000 }
    $3 == "context-switches" { cs = $1 }
    $3 ~ /nanosleep/ { ns = $1 }
    $3 ~ /futex/ { fx = $1 }
    END { printf "%-10s %9.2f %12.0f %12.0f %12.0f\n", (p == "proxy" ? "floor" : p), cpu, cs / cpu, ns / cpu, fx / cpu }' "$tmp/$p.stat"
done
