#!/usr/bin/env bash
# Real backing servers for Parley's scale mode, on loopback ports, for tests and
# local use. Idempotent: `up` installs what is missing (Debian packages),
# starts what is not running and waits until each answers.
#
#   scripts/services.sh up      install + start PostgreSQL, Redis, ClickHouse
#                               (and versitygw for S3 when its binary exists)
#   scripts/services.sh down    stop them (their data stays in the state dir)
#   scripts/services.sh env     print the export lines the tests read:
#                               eval "$(scripts/services.sh env)"
#   scripts/services.sh status  say which ones answer
#
# State lives in $PARLEY_SERVICES_DIR (default /tmp/parley-services). Ports
# are fixed so `env` needs no running server to answer.
set -euo pipefail

DIR="${PARLEY_SERVICES_DIR:-/tmp/parley-services}"
PG_PORT="${PARLEY_PG_PORT:-55432}"
REDIS_PORT="${PARLEY_REDIS_PORT:-56379}"
CH_PORT="${PARLEY_CH_PORT:-59000}"
CH_HTTP_PORT="${PARLEY_CH_HTTP_PORT:-58123}"
S3_PORT="${PARLEY_S3_PORT:-57070}"
S3_ACCESS="parleytest"
S3_SECRET="parleytestsecret"

log() { printf 'services: %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    log "need root to run: $*"; return 1; fi
}

apt_updated=0
apt_install() {
  # Install the Debian packages that are not installed yet; refresh the
  # package lists once if one is not found.
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! as_root apt-get install -y -q "${missing[@]}" >"$DIR/apt.log" 2>&1; then
    if [ $apt_updated = 0 ]; then
      apt_updated=1
      as_root apt-get update -q >>"$DIR/apt.log" 2>&1 || true
      as_root apt-get install -y -q "${missing[@]}" >>"$DIR/apt.log" 2>&1 || { tail -20 "$DIR/apt.log" >&2; return 1; }
    else
      tail -20 "$DIR/apt.log" >&2; return 1
    fi
  fi
}

wait_for() { # wait_for NAME SECONDS CMD...
  local name=$1 secs=$2; shift 2
  local i
  for ((i = 0; i < secs * 10; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  log "$name did not become ready in ${secs}s"
  return 1
}

# ---- PostgreSQL -------------------------------------------------------------

pg_bin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -n "$d" ] && echo "$d"
}

# pg_run runs a command as the postgres user: PostgreSQL refuses to run as root.
pg_run() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

pg_ready() { "$(pg_bin)/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"; }

pg_up() {
  command -v psql >/dev/null && [ -n "$(pg_bin)" ] || apt_install postgresql
  if pg_ready; then return 0; fi
  local bin data=$DIR/pg
  bin=$(pg_bin)
  if [ ! -f "$data/PG_VERSION" ]; then
    mkdir -p "$data"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$data"
    chmod 700 "$data"
    pg_run "$bin/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$DIR/pg-init.log" 2>&1 ||
      pg_run "$bin/initdb" -D "$data" -U postgres -A trust -E UTF8 --no-locale >"$DIR/pg-init.log" 2>&1 ||
      { cat "$DIR/pg-init.log" >&2; return 1; }
  fi
  mkdir -p "$DIR/pg-run"
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$DIR/pg-run"
  # Test settings: durability off (the data is disposable), enough
  # connections for two gateways and parallel test packages.
  pg_run "$bin/pg_ctl" -D "$data" -l "$DIR/pg-run/postgres.log" -w -t 60 start \
    -o "-p $PG_PORT -c listen_addresses=127.0.0.1 -k $DIR/pg-run -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 -c shared_buffers=128MB" \
    >/dev/null || { tail -20 "$DIR/pg-run/postgres.log" >&2; return 1; }
  wait_for postgresql 30 pg_ready
}

pg_down() {
  local bin
  bin=$(pg_bin) || return 0
  if [ -f "$DIR/pg/postmaster.pid" ]; then pg_run "$bin/pg_ctl" -D "$DIR/pg" -m fast -w stop >/dev/null 2>&1 || true; fi
}

# ---- Redis ------------------------------------------------------------------

redis_ready() { [ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ]; }

redis_up() {
  command -v redis-server >/dev/null || apt_install redis-server
  if redis_ready; then return 0; fi
  mkdir -p "$DIR/redis"
  redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --daemonize yes --dir "$DIR/redis" \
    --pidfile "$DIR/redis/redis.pid" --logfile "$DIR/redis/redis.log" --save "" --appendonly no
  wait_for redis 30 redis_ready
}

redis_down() {
  redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
}

# ---- ClickHouse -------------------------------------------------------------

ch_ready() { [ "$(curl -fsS "http://127.0.0.1:$CH_HTTP_PORT/ping" 2>/dev/null)" = "Ok." ]; }

ch_up() {
  command -v clickhouse-server >/dev/null || apt_install clickhouse-server
  if ch_ready; then return 0; fi
  local d=$DIR/clickhouse
  mkdir -p "$d/data" "$d/tmp" "$d/user_files" "$d/format_schemas" "$d/log"
  # Debian ships 18.16: run it from a copy of the packaged config with every
  # path moved under the state dir and only loopback ports.
  sed -e "s#/var/lib/clickhouse/tmp/#$d/tmp/#; s#/var/lib/clickhouse/user_files/#$d/user_files/#" \
      -e "s#/var/lib/clickhouse/format_schemas/#$d/format_schemas/#; s#/var/lib/clickhouse/#$d/data/#" \
      -e "s#/var/log/clickhouse-server/#$d/log/#g" \
      -e "s#<http_port>8123</http_port>#<http_port>$CH_HTTP_PORT</http_port>#" \
      -e "s#<tcp_port>9000</tcp_port>#<tcp_port>$CH_PORT</tcp_port>#" \
      -e "s#<interserver_http_port>9009</interserver_http_port>##" \
      -e "s#<listen_host>::1</listen_host>##" \
      /etc/clickhouse-server/config.xml >"$d/config.xml"
  cp /etc/clickhouse-server/users.xml "$d/users.xml"
  (cd "$d" && exec clickhouse-server --config-file="$d/config.xml") </dev/null >"$d/log/stdout.log" 2>&1 &
  echo $! >"$d/clickhouse.pid"
  wait_for clickhouse 60 ch_ready || { tail -20 "$d/log/"*.log >&2; return 1; }
}

ch_down() {
  local pidf=$DIR/clickhouse/clickhouse.pid
  if [ -f "$pidf" ]; then
    local pid
    pid=$(cat "$pidf")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidf"
  fi
}

# ---- S3 (versitygw) ----------------------------------------------------------

s3_bin() {
  command -v versitygw 2>/dev/null && return 0
  local g
  g="$(go env GOPATH 2>/dev/null)/bin/versitygw"
  [ -x "$g" ] && echo "$g"
}

s3_ready() { curl -s -o /dev/null "http://127.0.0.1:$S3_PORT/"; }

s3_up() {
  # versitygw takes ~4 min to build on 2 cores, so it is built only when
  # asked: PARLEY_SERVICES_S3=1 (CI sets it once the Blobs backend exists).
  local bin
  bin=$(s3_bin) || true
  if [ -z "$bin" ]; then
    [ "${PARLEY_SERVICES_S3:-0}" = 1 ] || return 0
    log "building versitygw (a few minutes)"
    go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
    bin=$(s3_bin)
  fi
  if s3_ready; then return 0; fi
  mkdir -p "$DIR/s3/data"
  "$bin" --access "$S3_ACCESS" --secret "$S3_SECRET" --port "127.0.0.1:$S3_PORT" posix "$DIR/s3/data" \
    </dev/null >"$DIR/s3/versitygw.log" 2>&1 &
  echo $! >"$DIR/s3/versitygw.pid"
  wait_for versitygw 30 s3_ready
}

s3_down() {
  local pidf=$DIR/s3/versitygw.pid
  if [ -f "$pidf" ]; then kill "$(cat "$pidf")" 2>/dev/null || true; rm -f "$pidf"; fi
}

# ---- commands -----------------------------------------------------------------

cmd_env() {
  echo "export PARLEY_TEST_POSTGRES_URL='postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable'"
  echo "export PARLEY_TEST_REDIS_URL='redis://127.0.0.1:$REDIS_PORT/0'"
  echo "export PARLEY_TEST_CLICKHOUSE_URL='clickhouse://127.0.0.1:$CH_PORT/default'"
  if s3_ready 2>/dev/null; then
    echo "export PARLEY_TEST_S3_ENDPOINT='http://127.0.0.1:$S3_PORT'"
    echo "export PARLEY_TEST_S3_ACCESS_KEY='$S3_ACCESS' PARLEY_TEST_S3_SECRET_KEY='$S3_SECRET'"
  fi
}

cmd_status() {
  pg_ready && echo "postgresql: up on 127.0.0.1:$PG_PORT" || echo "postgresql: down"
  redis_ready && echo "redis: up on 127.0.0.1:$REDIS_PORT" || echo "redis: down"
  ch_ready && echo "clickhouse: up on 127.0.0.1:$CH_PORT (http $CH_HTTP_PORT)" || echo "clickhouse: down"
  s3_ready && echo "s3 (versitygw): up on 127.0.0.1:$S3_PORT" || echo "s3 (versitygw): down"
}

mkdir -p "$DIR"
chmod 755 "$DIR"
case "${1:-}" in
  up)
    command -v curl >/dev/null || apt_install curl
    pg_up
    redis_up
    ch_up
    s3_up
    cmd_status >&2
    ;;
  down) s3_down; ch_down; redis_down; pg_down ;;
  env) cmd_env ;;
  status) cmd_status ;;
  *) echo "usage: $0 up|down|env|status" >&2; exit 2 ;;
esac
