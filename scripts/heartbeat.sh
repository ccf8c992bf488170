#!/usr/bin/env bash
# heartbeat.sh SECONDS COMMAND...: runs COMMAND, printing to stderr how long
# it has run every SECONDS while it runs (so a long, quiet step of a build
# does not look hung), and exits with COMMAND's status.
set -u
every=$1
shift
start=$SECONDS
"$@" &
pid=$!
trap 'kill "$pid" 2>/dev/null' INT TERM
(
  while sleep "$every"; do
    kill -0 "$pid" 2>/dev/null || exit 0
    printf '... still building: %d s so far\n' $((SECONDS - start)) >&2
  done
) &
beat=$!
wait "$pid"
status=$?
kill "$beat" 2>/dev/null
wait "$beat" 2>/dev/null
exit $status
