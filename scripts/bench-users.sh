#!/usr/bin/env bash
# The users profile (parley bench users) against scale mode on this machine:
# two gateways on scripts/services.sh's PostgreSQL, Redis, ClickHouse and
# Cassandra, two sim workers behind them; one run per number of users, each
# on freshly started processes. Reports go to test-artifacts/bench-users/.
#
#   scripts/bench-users.sh [USERS ...]      (default: 1000 5000 10000)
#
# Environment: THINK (mean think time, default 30s), DURATION (each run,
# default 3m), RAMP (sign-ins spread over, default 60s), MAX_TOKENS (60),
# TIME_SCALE (the sim workers' pace: 1 = a simulated GPU's, 0 = instant, to
# measure the platform alone), BIN (a built parley), DOMAIN (the accounts'
# domain: unset, each run's people are new accounts, signed up as they
# arrive, so no run inherits another's tier usage; set, a second run with the
# same DOMAIN logs the first run's people in), DATA_CLUSTERS (the users'
# data over that many PostgreSQL databases, --postgres-url with several URLs:
# the first is serve-env's, the others parley_data2, parley_data3…, made when
# missing; default 1; use a new DOMAIN when changing it). Exits non-zero when a run had
# failures. Loopback only; every process it starts it stops.
set -euo pipefail
cd "$(dirname "$0")/.."

THINK=${THINK:-30s} DURATION=${DURATION:-3m} RAMP=${RAMP:-60s} MAX_TOKENS=${MAX_TOKENS:-60} TIME_SCALE=${TIME_SCALE:-1}
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1000 5000 10000)
out=test-artifacts/bench-users
mkdir -p "$out"
tmp=$(mktemp -d)
pids=()
failed=0
stop() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap 'stop; rm -rf "$tmp"' EXIT

bin=${BIN:-$tmp/parley}
[ -n "${BIN:-}" ] || go build -o "$bin" ./server/cmd/parley
scripts/services.sh up >/dev/null
eval "$(scripts/services.sh serve-env)"
DATA_CLUSTERS=${DATA_CLUSTERS:-1}
if [ "$DATA_CLUSTERS" -gt 1 ]; then
  urls=$PARLEY_POSTGRES_URL
  for n in $(seq 2 "$DATA_CLUSTERS"); do
    db=parley_data$n
    admin=${PARLEY_POSTGRES_URL/\/parley\?//postgres?}
    [ "$(psql "$admin" -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" = 1 ] || psql -q "$admin" -c "CREATE DATABASE $db"
    urls="$urls ${PARLEY_POSTGRES_URL/\/parley\?//$db?}"
  done
  export PARLEY_POSTGRES_URL=$urls
fi
export PARLEY_SECRET=${PARLEY_SECRET:-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')}
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')

wait_port() { # wait_port PORT LOG
  for _ in $(seq 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listening on :$1; the end of its log:" >&2
  tail -n 20 "$2" >&2
  return 1
}

for users in "${counts[@]}"; do
  # (Sign-ins of thousands of people from one address: the login and
  # sign-up rates are the operator's; the tiers' request rates stay on.)
  for i in 1 2; do
    "$bin" worker --engine sim --listen "127.0.0.1:1893$i" --worker-token "$token" --max-batch 512 --time-scale "$TIME_SCALE" \
      >"$tmp/worker$i.log" 2>&1 &
    pids+=($!)
  done
  wait_port 18931 "$tmp/worker1.log"
  wait_port 18932 "$tmp/worker2.log"
  for i in 1 2; do
    "$bin" serve --listen "127.0.0.1:1892$i" --data-dir "$tmp/gw$i" --workers 127.0.0.1:18931,127.0.0.1:18932 --worker-token "$token" \
      --insecure-cookies --login-rate 1000000 --signup-rate-global 1000000 --auto-titles=false >"$tmp/gateway$i.log" 2>&1 &
    pids+=($!)
  done
  wait_port 18921 "$tmp/gateway1.log"
  wait_port 18922 "$tmp/gateway2.log"
  echo "== $users users (think $THINK, $DURATION, ramp $RAMP, sim time scale $TIME_SCALE, $DATA_CLUSTERS data clusters)" | tee "$out/$users.txt" >&2
  rc=0
  "$bin" bench users --url http://127.0.0.1:18921,http://127.0.0.1:18922 --users "$users" --ramp "$RAMP" --duration "$DURATION" \
    --think "$THINK" --max-tokens "$MAX_TOKENS" --domain "${DOMAIN:-run$(date +%s).bench.example}" --quiet | tee -a "$out/$users.txt" || rc=$?
  { echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"; } | tee -a "$out/$users.txt"
  stop
  [ $rc = 0 ] || { echo "($users users: the run had failures, above)" >&2; failed=1; }
done
exit "$failed"
