#!/usr/bin/env bash
# Real backing servers for Parley's scale mode, on loopback ports, for tests and
# local use. Idempotent: `up` installs what is missing (Debian packages),
# starts what is not running and waits until each answers.
#
#   scripts/services.sh up      install + start PostgreSQL, Redis, ClickHouse
#                               (and versitygw for S3 when its binary exists
#                               or PARLEY_SERVICES_S3=1; Apache Cassandra for
#                               CQL when PARLEY_SERVICES_CQL=1 or fetched before)
#                               PARLEY_SERVICES_PGHA=1 adds a second PostgreSQL
#                               primary with a streaming replica and PgBouncer
#                               (transaction mode) in front of it;
#                               PARLEY_SERVICES_PGBACKUP=1 adds a PostgreSQL
#                               backed up with pgBackRest (deploy/backup/pg.sh)
#                               to versitygw over TLS, with a synchronous WAL
#                               stream, for the restore drill;
#                               PARLEY_SERVICES_PGSYNC=1 adds a PostgreSQL
#                               primary with a synchronous hot standby, for
#                               the failover test (pgsync-failover promotes
#                               the standby, pgsync-reset makes the pair anew);
#                               PARLEY_SERVICES_REDIS_CLUSTER=1 adds a
#                               three-master Redis Cluster (both stay on once
#                               made: `up` restarts them while their state dir
#                               exists)
#   scripts/services.sh down    stop them (their data stays in the state dir)
#   scripts/services.sh env     print the export lines the tests read:
#                               eval "$(scripts/services.sh env)"
#   scripts/services.sh serve-env
#                               print the PARLEY_* export lines that make
#                               `parley serve` (and `parley admin`) run on the
#                               services that answer — scale mode:
#                               eval "$(scripts/services.sh serve-env)"
#                               (its own database "parley", Redis db 1, apart
#                               from the tests')
#   scripts/services.sh status  say which ones answer
#   scripts/services.sh nodetool ARGS...
#                               nodetool against the test Cassandra node
#   scripts/services.sh pgsync-failover | pgsync-reset
#   scripts/services.sh pgsync-stop-primary | pgsync-promote (a failover's two halves)
#                               stop the synchronous pair's primary at once and
#                               promote its standby | make the pair anew
#   scripts/services.sh pgbackup-crash
#                               the restore drill's disaster: stop the backed-up
#                               PostgreSQL at once and delete its data directory
#                               (deploy/backup/pg.sh restore, then `up`, bring
#                               it back)
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
CQL_PORT="${PARLEY_CQL_PORT:-59042}"
CQL_STORAGE_PORT="${PARLEY_CQL_STORAGE_PORT:-57100}"
PGHA_PRIMARY_PORT="${PARLEY_PGHA_PRIMARY_PORT:-55442}"
PGHA_REPLICA_PORT="${PARLEY_PGHA_REPLICA_PORT:-55443}"
PGBOUNCER_PORT="${PARLEY_PGBOUNCER_PORT:-56432}"
PGBR_PORT="${PARLEY_PGBACKUP_PORT:-55452}"
PGSYNC_PRIMARY_PORT="${PARLEY_PGSYNC_PRIMARY_PORT:-55462}"
PGSYNC_STANDBY_PORT="${PARLEY_PGSYNC_STANDBY_PORT:-55463}"
S3_TLS_PORT="${PARLEY_S3_TLS_PORT:-57443}"
# Cluster bus ports are these plus 10000, so they stay below 55536.
REDIS_CLUSTER_PORTS="${PARLEY_REDIS_CLUSTER_PORTS:-46391 46392 46393}"
CHC_BASE_PORT="${PARLEY_CH_CLUSTER_BASE_PORT:-59100}"
ZK_PORT="${PARLEY_ZK_PORT:-52181}"
CASSANDRA_VERSION=5.0.2
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

# The clusters of their own below (HA, backed up, synchronous pair) are made,
# started and stopped by these.

# pg_init DATADIR LOG: an empty cluster (trust on loopback), unless made.
pg_init() {
  [ -f "$1/PG_VERSION" ] && return 0
  pg_run "$(pg_bin)/initdb" -D "$1" -U postgres -A trust -E UTF8 --no-locale >"$2" 2>&1 || { cat "$2" >&2; return 1; }
}

# pg_clone PRIMARY_PORT DATADIR APPLICATION_NAME LOG: a streaming standby of
# the primary (pg_basebackup -R), unless made.
pg_clone() {
  [ -f "$2/PG_VERSION" ] && return 0
  rm -rf "$2.tmp"
  pg_run "$(pg_bin)/pg_basebackup" -d "host=127.0.0.1 port=$1 user=postgres application_name=$3" \
    -D "$2.tmp" -R -X stream -c fast >"$4" 2>&1 || { cat "$4" >&2; return 1; }
  mv "$2.tmp" "$2"
}

# pg_start DATADIR PORT SOCKET_DIR [SETTINGS]: starts the cluster on
# loopback unless PORT answers; its log is DATADIR.log.
pg_start() {
  "$(pg_bin)/pg_isready" -q -h 127.0.0.1 -p "$2" && return 0
  pg_run "$(pg_bin)/pg_ctl" -D "$1" -l "$1.log" -w -t 120 start -o "-p $2 -c listen_addresses=127.0.0.1 -k $3 ${4:-}" \
    >/dev/null || { tail -20 "$1.log" >&2; return 1; }
}

# pg_stop DATADIR [MODE]: stops the cluster if it runs (fast, or MODE).
pg_stop() {
  [ -f "$1/postmaster.pid" ] || return 0
  pg_run "$(pg_bin)/pg_ctl" -D "$1" -m "${2:-fast}" -w stop >/dev/null 2>&1 || true
}

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
  pg_bin >/dev/null || return 0
  pg_stop "$DIR/pg"
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
  wait_for clickhouse 120 ch_ready || { tail -n 20 "$d/log/"*.log >&2; return 1; }
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
  # The backup scripts' bucket (versitygw's posix backend: a directory).
  mkdir -p "$DIR/s3/data/parley-backups"
  if s3_ready; then return 0; fi
  "$bin" --access "$S3_ACCESS" --secret "$S3_SECRET" --port "127.0.0.1:$S3_PORT" posix "$DIR/s3/data" \
    </dev/null >"$DIR/s3/versitygw.log" 2>&1 &
  echo $! >"$DIR/s3/versitygw.pid"
  wait_for versitygw 30 s3_ready
}

s3_down() {
  local pidf=$DIR/s3/versitygw.pid
  if [ -f "$pidf" ]; then kill "$(cat "$pidf")" 2>/dev/null || true; rm -f "$pidf"; fi
}

# ---- CQL (Apache Cassandra from Maven Central) ---------------------------------

# No CQL server is packaged for Debian or npm: Apache Cassandra's jars come
# from Maven Central (cassandra-all and its dependencies, ~64 MB) and run on
# the JDK as org.apache.cassandra.service.CassandraDaemon. It speaks the same
# CQL as ScyllaDB.
cql_ready() { (exec 3<>"/dev/tcp/127.0.0.1/$CQL_PORT") 2>/dev/null; }

# The module flags Cassandra's conf/jvm17-server.options gives on JDK 17
# (the server's and nodetool's).
cql_jvm_opens() {
  local opens="" m
  for m in java.base/jdk.internal.misc java.base/jdk.internal.ref java.base/sun.nio.ch \
      java.management.rmi/com.sun.jmx.remote.internal.rmi java.rmi/sun.rmi.registry java.rmi/sun.rmi.server java.sql/java.sql; do
    opens="$opens --add-exports $m=ALL-UNNAMED"
  done
  for m in java.base/java.lang.module java.base/jdk.internal.loader java.base/jdk.internal.ref java.base/jdk.internal.reflect \
      java.base/jdk.internal.math java.base/jdk.internal.module java.base/jdk.internal.util.jar jdk.management/com.sun.management.internal \
      java.base/sun.nio.ch java.base/java.io java.base/java.nio java.base/java.util.concurrent java.base/java.util \
      java.base/java.util.concurrent.atomic java.base/java.lang java.base/java.math java.base/java.lang.reflect java.base/java.net; do
    opens="$opens --add-opens $m=ALL-UNNAMED"
  done
  echo "$opens"
}

# nodetool against the test node (its JMX port), from the same jars.
cql_nodetool() {
  local d=$DIR/cassandra
  [ -d "$d/lib" ] || { log "cassandra is not installed (PARLEY_SERVICES_CQL=1)"; return 1; }
  # shellcheck disable=SC2046
  java $(cql_jvm_opens) -cp "$d/lib/*" -Dlogback.configurationFile="$d/logback.xml" -Dcassandra.logdir="$d" -Duser.home="$d" \
    org.apache.cassandra.tools.NodeTool -h 127.0.0.1 -p $((CQL_STORAGE_PORT + 99)) "$@"
}

cql_up() {
  local d=$DIR/cassandra
  [ "${PARLEY_SERVICES_CQL:-0}" = 1 ] || [ -d "$d/lib" ] || return 0
  if cql_ready; then return 0; fi
  command -v java >/dev/null || apt_install openjdk-17-jre-headless
  command -v mvn >/dev/null || apt_install maven
  mkdir -p "$d"
  if [ ! -d "$d/lib" ]; then
    log "fetching Apache Cassandra $CASSANDRA_VERSION from Maven Central"
    printf '%s\n' '<project xmlns="http://maven.apache.org/POM/4.0.0">' \
      '  <modelVersion>4.0.0</modelVersion>' \
      '  <groupId>parley</groupId><artifactId>cassandra-runtime</artifactId><version>1</version>' \
      "  <dependencies><dependency><groupId>org.apache.cassandra</groupId><artifactId>cassandra-all</artifactId><version>$CASSANDRA_VERSION</version></dependency></dependencies>" \
      '</project>' >"$d/pom.xml"
    (cd "$d" && mvn -q -B dependency:copy-dependencies -DoutputDirectory=lib.tmp -DincludeScope=runtime >mvn.log 2>&1) ||
      { tail -20 "$d/mvn.log" >&2; return 1; }
    mv "$d/lib.tmp" "$d/lib"
  fi
  mkdir -p "$d/data"
  printf '%s\n' \
    "cluster_name: parley-test" \
    "num_tokens: 1" \
    "initial_token: 0" \
    "partitioner: org.apache.cassandra.dht.Murmur3Partitioner" \
    "commitlog_sync: periodic" \
    "commitlog_sync_period: 10000ms" \
    "seed_provider:" \
    "  - class_name: org.apache.cassandra.locator.SimpleSeedProvider" \
    "    parameters:" \
    "      - seeds: \"127.0.0.1:$CQL_STORAGE_PORT\"" \
    "endpoint_snitch: SimpleSnitch" \
    "listen_address: 127.0.0.1" \
    "rpc_address: 127.0.0.1" \
    "storage_port: $CQL_STORAGE_PORT" \
    "native_transport_port: $CQL_PORT" \
    "start_native_transport: true" \
    "data_file_directories: [$d/data/data]" \
    "commitlog_directory: $d/data/commitlog" \
    "saved_caches_directory: $d/data/saved_caches" \
    "hints_directory: $d/data/hints" \
    "cdc_raw_directory: $d/data/cdc_raw" \
    "disk_access_mode: mmap_index_only" \
    "auto_snapshot: false" >"$d/cassandra.yaml"
  printf '%s\n' '<configuration>' \
    '  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">' \
    '    <encoder><pattern>%d %level %logger{20} %msg%n</pattern></encoder>' \
    '  </appender>' \
    '  <root level="WARN"><appender-ref ref="STDOUT"/></root>' \
    '</configuration>' >"$d/logback.xml"
  local opens
  opens=$(cql_jvm_opens)
  # shellcheck disable=SC2086
  (cd "$d" && exec java -Xms512m -Xmx1g -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError $opens -Djdk.attach.allowAttachSelf=true \
    -Dcassandra.config="file://$d/cassandra.yaml" -Dcassandra.storagedir="$d/data" -Dlogback.configurationFile="$d/logback.xml" \
    -Dcassandra-foreground=yes -Dcassandra.skip_wait_for_gossip_to_settle=0 -Dcassandra.jmx.local.port=$((CQL_STORAGE_PORT + 99)) \
    -cp "$d/lib/*" org.apache.cassandra.service.CassandraDaemon) </dev/null >"$d/cassandra.log" 2>&1 &
  echo $! >"$d/cassandra.pid"
  wait_for cassandra 180 cql_ready || { tail -20 "$d/cassandra.log" >&2; return 1; }
}

cql_down() {
  local pidf=$DIR/cassandra/cassandra.pid
  if [ -f "$pidf" ]; then
    local pid
    pid=$(cat "$pidf")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidf"
  fi
}

# ---- PostgreSQL HA: a primary, a streaming replica, PgBouncer ------------------

# A primary of its own (not the one above, so pausing or stopping its replica
# disturbs no other test), a hot standby cloned from it with pg_basebackup -R,
# and PgBouncer in transaction mode in front of the primary. Made when
# PARLEY_SERVICES_PGHA=1, restarted by `up` once made.
pgha_ready() {
  "$(pg_bin)/pg_isready" -q -h 127.0.0.1 -p "$PGHA_PRIMARY_PORT" &&
    "$(pg_bin)/pg_isready" -q -h 127.0.0.1 -p "$PGHA_REPLICA_PORT" &&
    psql -qtAX "postgres://postgres@127.0.0.1:$PGBOUNCER_PORT/postgres?sslmode=disable" -c 'SELECT 1' 2>/dev/null | grep -qx 1
}

pgha_start() { # pgha_start DATADIR PORT
  pg_start "$1" "$2" "$DIR/pgha/run" "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c shared_buffers=64MB -c wal_level=replica -c max_wal_senders=5 -c hot_standby=on -c hot_standby_feedback=on"
}

pgha_up() {
  local d=$DIR/pgha bin
  [ "${PARLEY_SERVICES_PGHA:-0}" = 1 ] || [ -d "$d" ] || return 0
  command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ] || apt_install pgbouncer
  bin=$(pg_bin)
  mkdir -p "$d/run"
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$d" "$d/run"
  chmod 700 "$d"
  pg_init "$d/primary" "$d/init.log"
  pgha_start "$d/primary" "$PGHA_PRIMARY_PORT"
  wait_for "postgresql (ha primary)" 30 "$bin/pg_isready" -q -h 127.0.0.1 -p "$PGHA_PRIMARY_PORT"
  pg_clone "$PGHA_PRIMARY_PORT" "$d/replica" replica "$d/basebackup.log"
  pgha_start "$d/replica" "$PGHA_REPLICA_PORT"
  wait_for "postgresql (ha replica)" 30 "$bin/pg_isready" -q -h 127.0.0.1 -p "$PGHA_REPLICA_PORT"
  if ! pgha_ready; then
    # Every database name goes to the primary; a pool per database and user.
    printf '%s\n' '[databases]' "* = host=127.0.0.1 port=$PGHA_PRIMARY_PORT" '' '[pgbouncer]' \
      "listen_addr = 127.0.0.1" "listen_port = $PGBOUNCER_PORT" "unix_socket_dir = $d/run" \
      "auth_type = trust" "auth_file = $d/userlist.txt" "admin_users = postgres" \
      "pool_mode = transaction" "max_client_conn = 2000" "default_pool_size = 20" "max_db_connections = 40" \
      "server_reset_query =" "ignore_startup_parameters = extra_float_digits" \
      "logfile = $d/pgbouncer.log" "pidfile = $d/run/pgbouncer.pid" >"$d/pgbouncer.ini"
    echo '"postgres" ""' >"$d/userlist.txt"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$d/pgbouncer.ini" "$d/userlist.txt"
    pg_run "$(command -v pgbouncer || echo /usr/sbin/pgbouncer)" -d "$d/pgbouncer.ini" >/dev/null 2>&1 ||
      { tail -20 "$d/pgbouncer.log" >&2; return 1; }
  fi
  wait_for "pgha (primary, replica, pgbouncer)" 30 pgha_ready || { tail -20 "$d/pgbouncer.log" >&2; return 1; }
}

pgha_down() {
  local d=$DIR/pgha x
  pg_bin >/dev/null || return 0
  if [ -f "$d/run/pgbouncer.pid" ]; then kill "$(cat "$d/run/pgbouncer.pid")" 2>/dev/null || true; rm -f "$d/run/pgbouncer.pid"; fi
  for x in replica primary; do pg_stop "$d/$x"; done
}

# ---- PostgreSQL with backups: pgBackRest to S3, a synchronous WAL stream ------

# A primary of its own whose WAL is archived with pgBackRest into the bucket
# "parley-backups" of versitygw (the same data as the S3 server above, served
# over TLS with a certificate of its own: pgBackRest speaks S3 only over
# HTTPS), and streamed by pg_receivewal as a synchronous standby: a commit
# returns once its WAL is in the stream directory. Made when
# PARLEY_SERVICES_PGBACKUP=1, restarted by `up` once made. The tests' restore
# drill destroys it (pgbackup-crash) and restores it (deploy/backup/pg.sh).
pgbr_env() {
  local d=$DIR/pgbr
  export PGBACKREST_CONFIG=$d/pgbackrest.conf PGBACKREST_STANZA=parley PARLEY_WAL_STREAM_DIR=$d/stream
  export PGHOST=$d/run PGPORT=$PGBR_PORT PGUSER=postgres
}

pgbr_stream_running() { [ -f "$DIR/pgbr/stream.pid" ] && kill -0 "$(cat "$DIR/pgbr/stream.pid")" 2>/dev/null; }

pgbr_ready() {
  "$(pg_bin)/pg_isready" -q -h 127.0.0.1 -p "$PGBR_PORT" &&
    [ "$(psql -qtAX "postgres://postgres@127.0.0.1:$PGBR_PORT/postgres?sslmode=disable" -c "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'pg_receivewal'" 2>/dev/null)" = sync ]
}

s3tls_ready() { curl -s -o /dev/null --cacert "$DIR/pgbr/s3.crt" "https://localhost:$S3_TLS_PORT/"; }

pgbr_up() {
  local d=$DIR/pgbr
  [ "${PARLEY_SERVICES_PGBACKUP:-0}" = 1 ] || [ -d "$d" ] || return 0
  command -v pgbackrest >/dev/null || apt_install pgbackrest
  command -v openssl >/dev/null || apt_install openssl
  mkdir -p "$d/run" "$d/log" "$d/lock" "$d/spool" "$d/stream" "$DIR/s3/data/parley-backups"
  if [ ! -f "$d/s3.crt" ]; then
    # pgBackRest matches the certificate against a host name (not an IP).
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 -subj /CN=localhost \
      -addext subjectAltName=DNS:localhost -keyout "$d/s3.key" -out "$d/s3.crt" 2>/dev/null
  fi
  if ! s3tls_ready; then
    local vgw
    vgw=$(s3_bin) || { log "pgbackup needs versitygw (PARLEY_SERVICES_S3=1)"; return 1; }
    "$vgw" --access "$S3_ACCESS" --secret "$S3_SECRET" --port "127.0.0.1:$S3_TLS_PORT" --cert "$d/s3.crt" --key "$d/s3.key" \
      posix "$DIR/s3/data" </dev/null >"$d/versitygw-tls.log" 2>&1 &
    echo $! >"$d/versitygw-tls.pid"
    wait_for "versitygw (TLS)" 30 s3tls_ready
  fi
  printf '%s\n' '[global]' 'repo1-type=s3' 'repo1-s3-endpoint=localhost' "repo1-storage-port=$S3_TLS_PORT" \
    'repo1-s3-bucket=parley-backups' 'repo1-s3-region=us-east-1' 'repo1-s3-uri-style=path' \
    "repo1-s3-key=$S3_ACCESS" "repo1-s3-key-secret=$S3_SECRET" "repo1-storage-ca-file=$d/s3.crt" \
    "repo1-path=/pgbackrest-$(basename "$DIR")" 'repo1-retention-full=2' 'start-fast=y' 'compress-type=lz4' \
    "log-path=$d/log" "lock-path=$d/lock" "spool-path=$d/spool" 'log-level-console=warn' '' \
    '[parley]' "pg1-path=$d/data" "pg1-port=$PGBR_PORT" "pg1-socket-path=$d/run" 'pg1-user=postgres' >"$d/pgbackrest.conf"
  [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$d"
  chmod 700 "$d"
  if [ ! -f "$d/data/PG_VERSION" ] && [ -f "$d/stanza-made" ]; then
    # A drill stopped between its disaster and its restore: restore, or
    # (no backup yet) start over with an empty repository.
    log "pgbackup: the data directory is gone; restoring it (deploy/backup/pg.sh restore)"
    if ! (pgbr_env && "$(cd "$(dirname "$0")/.." && pwd)/deploy/backup/pg.sh" restore >"$d/restore.log" 2>&1); then
      log "pgbackup: no backup to restore; starting over"
      rm -rf "$d/data" "$d/stanza-made" "$d/stream" "$DIR/s3/data/parley-backups/pgbackrest-$(basename "$DIR")"
      mkdir -p "$d/stream"
      [ "$(id -u)" = 0 ] && chown postgres:postgres "$d/stream"
    fi
  fi
  pg_init "$d/data" "$d/init.log"
  pg_start "$d/data" "$PGBR_PORT" "$d/run" "-c max_connections=100 -c shared_buffers=64MB -c wal_level=replica -c max_wal_senders=5 -c archive_mode=on -c archive_timeout=30 -c synchronous_standby_names=pg_receivewal -c archive_command='pgbackrest --config=$d/pgbackrest.conf --stanza=parley archive-push %p'"
  pgbr_env
  if [ ! -f "$d/stanza-made" ]; then
    # No stanza made here: a repository left in the bucket (by a data
    # directory since removed) belongs to no database, and would refuse it.
    rm -rf "$DIR/s3/data/parley-backups/pgbackrest-$(basename "$DIR")"
    pg_run pgbackrest stanza-create >"$d/stanza.log" 2>&1 || { cat "$d/stanza.log" >&2; return 1; }
    touch "$d/stanza-made"
  fi
  if ! pgbr_stream_running; then
    setsid "$(cd "$(dirname "$0")/.." && pwd)/deploy/backup/pg.sh" stream </dev/null >>"$d/stream.log" 2>&1 &
    echo $! >"$d/stream.pid"
  fi
  wait_for "postgresql (backed up, with its WAL stream)" 60 pgbr_ready || { tail -20 "$d/stream.log" >&2; return 1; }
}

pgbr_down() {
  local d=$DIR/pgbr
  pg_bin >/dev/null || return 0
  if pgbr_stream_running; then kill -- "-$(cat "$d/stream.pid")" 2>/dev/null || kill "$(cat "$d/stream.pid")" 2>/dev/null || true; fi
  rm -f "$d/stream.pid"
  pg_stop "$d/data"
  if [ -f "$d/versitygw-tls.pid" ]; then kill "$(cat "$d/versitygw-tls.pid")" 2>/dev/null || true; rm -f "$d/versitygw-tls.pid"; fi
}

pgbr_crash() {
  local d=$DIR/pgbr
  [ -d "$d/data" ] || { log "pgbackup: no data directory"; return 1; }
  pg_stop "$d/data" immediate
  rm -rf "$d/data"
}

# ---- PostgreSQL with a synchronous standby ---------------------------------------

# A primary whose commits return only once its hot standby has flushed their
# WAL (synchronous_standby_names = 'standby'), durable settings (fsync on):
# the failover test kills the primary right after a charge and promotes the
# standby. Made when PARLEY_SERVICES_PGSYNC=1, restarted by `up` once made.
pgsync_ready() {
  [ "$(psql -qtAX "postgres://postgres@127.0.0.1:$PGSYNC_PRIMARY_PORT/postgres?sslmode=disable" -c "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'" 2>/dev/null)" = sync ] &&
    "$(pg_bin)/pg_isready" -q -h 127.0.0.1 -p "$PGSYNC_STANDBY_PORT"
}

pgsync_start() { # pgsync_start DATADIR PORT [SETTINGS]: the primary waits for its standby; a promoted standby for none
  pg_start "$1" "$2" "$DIR/pgsync/run" "-c max_connections=100 -c shared_buffers=64MB -c wal_level=replica -c max_wal_senders=5 -c hot_standby=on ${3:-}"
}

pgsync_up() {
  local d=$DIR/pgsync
  [ "${PARLEY_SERVICES_PGSYNC:-0}" = 1 ] || [ -d "$d" ] || return 0
  if [ -f "$d/standby/PG_VERSION" ] && [ ! -f "$d/standby/standby.signal" ]; then
    log "pgsync: a failover was left behind (the standby was promoted); making the pair anew"
    pgsync_down
    rm -rf "$d"
  fi
  mkdir -p "$d/run"
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$d" "$d/run"
  chmod 700 "$d"
  pg_init "$d/primary" "$d/init.log"
  pgsync_start "$d/primary" "$PGSYNC_PRIMARY_PORT" "-c synchronous_standby_names=standby"
  pg_clone "$PGSYNC_PRIMARY_PORT" "$d/standby" standby "$d/basebackup.log"
  pgsync_start "$d/standby" "$PGSYNC_STANDBY_PORT"
  wait_for "postgresql (primary with a synchronous standby)" 30 pgsync_ready
}

pgsync_down() {
  local d=$DIR/pgsync x
  pg_bin >/dev/null || return 0
  for x in standby primary; do pg_stop "$d/$x"; done
}

# The failover: the primary dies at once (no shutdown checkpoint, no goodbye
# to its clients), the standby is promoted and takes writes.
pgsync_failover() {
  pgsync_stop_primary
  pgsync_promote
}

# The two halves of a failover, for tests that look at the time between.
pgsync_stop_primary() { pg_stop "$DIR/pgsync/primary" immediate; }
pgsync_promote() { pg_run "$(pg_bin)/pg_ctl" -D "$DIR/pgsync/standby" -w -t 60 promote >/dev/null; }

# A new pair (the promoted standby's history is not the old primary's).
pgsync_reset() {
  pgsync_down
  rm -rf "$DIR/pgsync"
  PARLEY_SERVICES_PGSYNC=1 pgsync_up
}

# ---- Redis Cluster: three masters ------------------------------------------------

# Three cluster-enabled redis-servers joined with redis-cli --cluster create
# (no replicas). Made when PARLEY_SERVICES_REDIS_CLUSTER=1, restarted by `up`
# once made (nodes.conf keeps the slots).
redis_cluster_ready() {
  local p
  p=${REDIS_CLUSTER_PORTS%% *}
  redis-cli -h 127.0.0.1 -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok'
}

redis_cluster_up() {
  local d=$DIR/redis-cluster p addrs=()
  [ "${PARLEY_SERVICES_REDIS_CLUSTER:-0}" = 1 ] || [ -d "$d" ] || return 0
  command -v redis-server >/dev/null || apt_install redis-server
  for p in $REDIS_CLUSTER_PORTS; do
    addrs+=("127.0.0.1:$p")
    [ "$(redis-cli -h 127.0.0.1 -p "$p" ping 2>/dev/null)" = PONG ] && continue
    mkdir -p "$d/$p"
    redis-server --bind 127.0.0.1 --port "$p" --cluster-enabled yes --cluster-config-file nodes.conf \
      --daemonize yes --dir "$d/$p" --pidfile "$d/$p/redis.pid" --logfile "$d/$p/redis.log" --save "" --appendonly no
    wait_for "redis cluster node $p" 30 bash -c "[ \"\$(redis-cli -h 127.0.0.1 -p $p ping)\" = PONG ]"
  done
  redis_cluster_ready && return 0
  if redis-cli -h 127.0.0.1 -p "${REDIS_CLUSTER_PORTS%% *}" cluster info 2>/dev/null | tr -d '\r' | grep -qx 'cluster_known_nodes:1'; then
    redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >"$d/create.log" 2>&1 ||
      { cat "$d/create.log" >&2; return 1; }
  fi
  wait_for "redis cluster" 30 redis_cluster_ready
}

redis_cluster_down() {
  local p
  for p in $REDIS_CLUSTER_PORTS; do redis-cli -h 127.0.0.1 -p "$p" shutdown nosave >/dev/null 2>&1 || true; done
}

# ---- ClickHouse cluster ------------------------------------------------------
# PARLEY_SERVICES_CH_CLUSTER=1: usage records as scale mode runs them at size,
# two shards of two replicas each (four clickhouse-server processes, cluster
# "parley", ReplicatedMergeTree), coordinated by one ZooKeeper from Debian's
# package. Node n (1–4) is shard (n+1)/2, replica r1 or r2; its ports are
# CHC_BASE_PORT+n (native), +10+n (HTTP), +20+n (replication). chc-lose N
# stops node N and deletes its data (a lost replica); chc-restore N brings it
# back and it fetches its shard from the other replica (docs/backup.md).

chc_port() { echo $((CHC_BASE_PORT + $2 + $1)); } # chc_port N OFFSET
chc_node_ready() { [ "$(curl -fsS "http://127.0.0.1:$(chc_port "$1" 10)/ping" 2>/dev/null)" = "Ok." ]; }
chc_ready() { local n; for n in 1 2 3 4; do chc_node_ready "$n" || return 1; done; }
# Serving, not just running: ruok answers imok while ZooKeeper still loads its
# data, and a ClickHouse that starts then cannot attach its replicated tables.
zk_ready() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$ZK_PORT; echo srvr >&3; cat <&3" 2>/dev/null | grep -q '^Mode: '; }

zk_up() {
  local d=$DIR/zookeeper
  apt_install zookeeper
  zk_ready && return 0
  mkdir -p "$d/data"
  printf '%s\n' "tickTime=2000" "dataDir=$d/data" "clientPort=$ZK_PORT" "clientPortAddress=127.0.0.1" \
    "admin.enableServer=false" "maxClientCnxns=0" "4lw.commands.whitelist=srvr" "autopurge.purgeInterval=1" >"$d/zoo.cfg"
  (cd "$d" && exec java -Xmx256m -cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$d/zoo.cfg") </dev/null >"$d/zookeeper.log" 2>&1 &
  echo $! >"$d/zookeeper.pid"
  wait_for zookeeper 60 zk_ready || { tail -20 "$d/zookeeper.log" >&2; return 1; }
}

chc_node_up() {
  local n=$1 d=$DIR/ch-cluster/node$1
  chc_node_ready "$n" && return 0
  mkdir -p "$d/data" "$d/tmp" "$d/user_files" "$d/format_schemas" "$d/log" "$d/config.d"
  sed -e "s#/var/lib/clickhouse/tmp/#$d/tmp/#; s#/var/lib/clickhouse/user_files/#$d/user_files/#" \
      -e "s#/var/lib/clickhouse/format_schemas/#$d/format_schemas/#; s#/var/lib/clickhouse/#$d/data/#" \
      -e "s#/var/log/clickhouse-server/#$d/log/#g" \
      -e "s#<http_port>8123</http_port>#<http_port>$(chc_port "$n" 10)</http_port>#" \
      -e "s#<tcp_port>9000</tcp_port>#<tcp_port>$(chc_port "$n" 0)</tcp_port>#" \
      -e "s#<interserver_http_port>9009</interserver_http_port>#<interserver_http_port>$(chc_port "$n" 20)</interserver_http_port>#" \
      -e "s#<listen_host>::1</listen_host>##" \
      -e "s#<uncompressed_cache_size>[0-9]*<#<uncompressed_cache_size>268435456<#; s#<mark_cache_size>[0-9]*<#<mark_cache_size>268435456<#" \
      /etc/clickhouse-server/config.xml >"$d/config.xml"
  # Cluster mode reads where it writes: the first replica of each shard
  # that answers (server/store/clickhouse checks the profile at start).
  sed -e "s#<load_balancing>random</load_balancing>#<load_balancing>in_order</load_balancing>#" \
    /etc/clickhouse-server/users.xml >"$d/users.xml"
  local shard=$(((n + 1) / 2)) replica=$(((n - 1) % 2 + 1)) s m
  {
    echo "<yandex><interserver_http_host>127.0.0.1</interserver_http_host>"
    echo "<zookeeper><node><host>127.0.0.1</host><port>$ZK_PORT</port></node></zookeeper>"
    echo "<macros><shard>0$shard</shard><replica>r$replica</replica></macros>"
    echo "<remote_servers><parley>"
    for s in 1 2; do
      echo "<shard><internal_replication>true</internal_replication>"
      for m in $((2 * s - 1)) $((2 * s)); do
        echo "<replica><host>127.0.0.1</host><port>$(chc_port "$m" 0)</port></replica>"
      done
      echo "</shard>"
    done
    echo "</parley></remote_servers></yandex>"
  } >"$d/config.d/cluster.xml"
  (cd "$d" && exec clickhouse-server --config-file="$d/config.xml") </dev/null >"$d/log/stdout.log" 2>&1 &
  echo $! >"$d/clickhouse.pid"
}

chc_up() {
  [ "${PARLEY_SERVICES_CH_CLUSTER:-0}" = 1 ] || [ -d "$DIR/ch-cluster" ] || return 0
  command -v clickhouse-server >/dev/null || apt_install clickhouse-server
  zk_up
  local n
  for n in 1 2 3 4; do chc_node_up "$n"; done
  wait_for "clickhouse cluster" 90 chc_ready || { tail -n 20 "$DIR"/ch-cluster/node*/log/clickhouse-server.err.log >&2; return 1; }
}

stop_pidfile() { # stop_pidfile FILE: TERM, up to 30 s, then KILL
  local pid
  [ -f "$1" ] || return 0
  pid=$(cat "$1")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$1"
}

chc_down() {
  local n
  for n in 1 2 3 4; do stop_pidfile "$DIR/ch-cluster/node$n/clickhouse.pid"; done
  stop_pidfile "$DIR/zookeeper/zookeeper.pid"
}

chc_start() {
  chc_node_up "${1:?chc-start needs a node number, 1 to 4}"
  wait_for "clickhouse node $1" 60 chc_node_ready "$1" || { tail -20 "$DIR/ch-cluster/node$1/log/clickhouse-server.err.log" >&2; return 1; }
}

chc_stop() { stop_pidfile "$DIR/ch-cluster/node${1:?chc-stop needs a node number, 1 to 4}/clickhouse.pid"; }

chc_lose() {
  local n=${1:?chc-lose needs a node number, 1 to 4}
  [ -d "$DIR/ch-cluster/node$n" ] || { echo "no node $n under $DIR/ch-cluster" >&2; return 1; }
  stop_pidfile "$DIR/ch-cluster/node$n/clickhouse.pid"
  rm -rf "$DIR/ch-cluster/node$n"
}

# chc_restore N: the documented recovery of a replica whose disk was lost:
# the table definitions copied from the other replica of its shard, the
# force_restore_data flag set, and the server started; each Replicated table
# then finds its replica in ZooKeeper without parts and fetches them.
chc_restore() {
  local n=${1:?chc-restore needs a node number, 1 to 4} d=$DIR/ch-cluster/node${1:-}
  local sib=$(( ${1:-1} % 2 == 1 ? ${1:-1} + 1 : ${1:-1} - 1 ))
  chc_node_ready "$n" && return 0
  [ -d "$DIR/ch-cluster/node$sib/data/metadata" ] || { echo "node $sib has no metadata to copy" >&2; return 1; }
  mkdir -p "$d/data/flags"
  cp -r "$DIR/ch-cluster/node$sib/data/metadata" "$d/data/"
  touch "$d/data/flags/force_restore_data"
  chc_start "$n"
}

# ---- commands -----------------------------------------------------------------

cmd_env() {
  echo "export PARLEY_TEST_POSTGRES_URL='postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable'"
  echo "export PARLEY_TEST_REDIS_URL='redis://127.0.0.1:$REDIS_PORT/0'"
  echo "export PARLEY_TEST_CLICKHOUSE_URL='clickhouse://127.0.0.1:$CH_PORT/default'"
  echo "export PARLEY_TEST_CLICKHOUSE_HTTP='http://127.0.0.1:$CH_HTTP_PORT' PARLEY_TEST_CLICKHOUSE_DATA='$DIR/clickhouse/data'"
  if s3_ready 2>/dev/null; then
    echo "export PARLEY_TEST_S3_ENDPOINT='http://127.0.0.1:$S3_PORT'"
    echo "export PARLEY_TEST_S3_ACCESS_KEY='$S3_ACCESS' PARLEY_TEST_S3_SECRET_KEY='$S3_SECRET'"
  fi
  if cql_ready; then
    echo "export PARLEY_TEST_CASSANDRA_HOSTS='127.0.0.1:$CQL_PORT'"
    echo "export PARLEY_TEST_CASSANDRA_DATA='$DIR/cassandra/data/data'"
  fi
  if [ -d "$DIR/pgha" ] && pgha_ready 2>/dev/null; then
    echo "export PARLEY_TEST_PGHA_PRIMARY_URL='postgres://postgres@127.0.0.1:$PGHA_PRIMARY_PORT/postgres?sslmode=disable'"
    echo "export PARLEY_TEST_POSTGRES_REPLICA_URL='postgres://postgres@127.0.0.1:$PGHA_REPLICA_PORT/postgres?sslmode=disable'"
    echo "export PARLEY_TEST_PGBOUNCER_URL='postgres://postgres@127.0.0.1:$PGBOUNCER_PORT/postgres?sslmode=disable'"
  fi
  if [ -d "$DIR/pgsync" ] && pgsync_ready 2>/dev/null; then
    echo "export PARLEY_TEST_PGSYNC_PRIMARY_URL='postgres://postgres@127.0.0.1:$PGSYNC_PRIMARY_PORT/postgres?sslmode=disable'"
    echo "export PARLEY_TEST_PGSYNC_STANDBY_URL='postgres://postgres@127.0.0.1:$PGSYNC_STANDBY_PORT/postgres?sslmode=disable'"
  fi
  if [ -d "$DIR/pgbr" ] && pgbr_ready 2>/dev/null; then
    echo "export PARLEY_TEST_PGBACKUP_URL='postgres://postgres@127.0.0.1:$PGBR_PORT/postgres?sslmode=disable'"
  fi
  if [ -d "$DIR/ch-cluster" ] && chc_ready; then
    echo "export PARLEY_TEST_CLICKHOUSE_CLUSTER_URL='clickhouse://127.0.0.1:$(chc_port 1 0),127.0.0.1:$(chc_port 2 0),127.0.0.1:$(chc_port 3 0),127.0.0.1:$(chc_port 4 0)/default' PARLEY_TEST_CLICKHOUSE_CLUSTER=parley"
  fi
  if [ -d "$DIR/redis-cluster" ] && redis_cluster_ready; then
    local p hosts=""
    for p in $REDIS_CLUSTER_PORTS; do hosts="$hosts${hosts:+,}127.0.0.1:$p"; done
    echo "export PARLEY_TEST_REDIS_CLUSTER_URL='redis+cluster://$hosts'"
  fi
}

# cmd_serve_env prints the settings of `parley serve` (PARLEY_<FLAG>, see
# docs/config.md) for each service that answers now: its own PostgreSQL
# database and ClickHouse database "parley" (made here if missing) and Redis
# db 1, so a local gateway's data stays apart from the tests'. The services
# that do not answer are said on stderr and left embedded.
cmd_serve_env() {
  local db=parley names=()
  if pg_ready; then
    if [ "$(psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" != 1 ]; then
      psql -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -c "CREATE DATABASE $db" >/dev/null
    fi
    names+=(PARLEY_POSTGRES_URL)
    echo "export PARLEY_POSTGRES_URL='postgres://postgres@127.0.0.1:$PG_PORT/$db?sslmode=disable'"
  else
    log "postgresql down: relational stores stay in SQLite"
  fi
  if redis_ready; then
    names+=(PARLEY_REDIS_URL)
    echo "export PARLEY_REDIS_URL='redis://127.0.0.1:$REDIS_PORT/1'"
  else
    log "redis down: limiter and live generations stay in process"
  fi
  if ch_ready; then
    curl -fsS "http://127.0.0.1:$CH_HTTP_PORT/" --data-binary "CREATE DATABASE IF NOT EXISTS $db" >/dev/null
    names+=(PARLEY_CLICKHOUSE_URL)
    echo "export PARLEY_CLICKHOUSE_URL='clickhouse://127.0.0.1:$CH_PORT/$db'"
  else
    log "clickhouse down: usage records stay in the relational store"
  fi
  if cql_ready; then
    names+=(PARLEY_CASSANDRA_HOSTS PARLEY_CASSANDRA_KEYSPACE)
    echo "export PARLEY_CASSANDRA_HOSTS='127.0.0.1:$CQL_PORT' PARLEY_CASSANDRA_KEYSPACE='$db'"
  fi
  if s3_ready 2>/dev/null; then
    names+=(PARLEY_S3_ENDPOINT PARLEY_S3_BUCKET PARLEY_S3_ACCESS_KEY PARLEY_S3_SECRET_KEY)
    echo "export PARLEY_S3_ENDPOINT='http://127.0.0.1:$S3_PORT' PARLEY_S3_BUCKET='$db'"
    echo "export PARLEY_S3_ACCESS_KEY='$S3_ACCESS' PARLEY_S3_SECRET_KEY='$S3_SECRET'"
  fi
  [ ${#names[@]} -eq 0 ] || echo "# back to the embedded default: unset ${names[*]}"
}

cmd_status() {
  pg_ready && echo "postgresql: up on 127.0.0.1:$PG_PORT" || echo "postgresql: down"
  redis_ready && echo "redis: up on 127.0.0.1:$REDIS_PORT" || echo "redis: down"
  ch_ready && echo "clickhouse: up on 127.0.0.1:$CH_PORT (http $CH_HTTP_PORT)" || echo "clickhouse: down"
  s3_ready && echo "s3 (versitygw): up on 127.0.0.1:$S3_PORT" || echo "s3 (versitygw): down"
  cql_ready && echo "cql (cassandra): up on 127.0.0.1:$CQL_PORT" || echo "cql (cassandra): down"
  if [ -d "$DIR/pgha" ]; then
    pgha_ready && echo "pgha: primary 127.0.0.1:$PGHA_PRIMARY_PORT, replica :$PGHA_REPLICA_PORT, pgbouncer :$PGBOUNCER_PORT" || echo "pgha: down"
  fi
  if [ -d "$DIR/pgsync" ]; then
    pgsync_ready && echo "pgsync: primary 127.0.0.1:$PGSYNC_PRIMARY_PORT, synchronous standby :$PGSYNC_STANDBY_PORT" || echo "pgsync: down"
  fi
  if [ -d "$DIR/pgbr" ]; then
    pgbr_ready && echo "pgbackup: 127.0.0.1:$PGBR_PORT, WAL streamed, archived to https://localhost:$S3_TLS_PORT" || echo "pgbackup: down"
  fi
  if [ -d "$DIR/ch-cluster" ]; then
    chc_ready && echo "clickhouse cluster: parley, 2 shards x 2 replicas on 127.0.0.1 ports $(chc_port 1 0)-$(chc_port 4 0), zookeeper :$ZK_PORT" || echo "clickhouse cluster: down"
  fi
  if [ -d "$DIR/redis-cluster" ]; then
    redis_cluster_ready && echo "redis cluster: up on 127.0.0.1 ports $REDIS_CLUSTER_PORTS" || echo "redis cluster: down"
  fi
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
    cql_up
    pgha_up
    pgbr_up
    pgsync_up
    redis_cluster_up
    chc_up
    cmd_status >&2
    ;;
  down) chc_down; redis_cluster_down; pgsync_down; pgbr_down; pgha_down; cql_down; s3_down; ch_down; redis_down; pg_down ;;
  env) cmd_env ;;
  serve-env) cmd_serve_env ;;
  status) cmd_status ;;
  pgbackup-env) pgbr_env; export -p | grep -E ' (PGBACKREST_CONFIG|PGBACKREST_STANZA|PARLEY_WAL_STREAM_DIR|PGHOST|PGPORT|PGUSER)=' ;;
  pgbackup-crash) pgbr_crash ;;
  nodetool) shift; cql_nodetool "$@" ;;
  pgsync-failover) pgsync_failover ;;
  pgsync-stop-primary) pgsync_stop_primary ;;
  pgsync-promote) pgsync_promote ;;
  pgsync-reset) pgsync_reset ;;
  chc-lose) chc_lose "${2:-}" ;;
  chc-restore) chc_restore "${2:-}" ;;
  chc-stop) chc_stop "${2:-}" ;;
  chc-start) chc_start "${2:-}" ;;
  *) echo "usage: $0 up|down|env|serve-env|status|pgbackup-env|pgbackup-crash|pgsync-failover|pgsync-stop-primary|pgsync-promote|pgsync-reset|nodetool" >&2; exit 2 ;;
esac
