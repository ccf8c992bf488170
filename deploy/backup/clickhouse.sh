#!/usr/bin/env bash
# ClickHouse backups of Parley's usage records, for the ClickHouse that
# Debian ships (18.16), which has no BACKUP statement: ALTER TABLE … FREEZE
# hard-links every part into shadow/ (instantly, without stopping writes),
# the parts go to the S3 bucket as one tar, and a restore puts them into the
# table's detached/ directory and attaches them (ATTACH PART). Rows already
# in the table stay: usage_records is a ReplacingMergeTree read with FINAL,
# so a record both restored and present counts once. Run it on the ClickHouse
# host (it reads the data directory). Runbook: docs/backup.md.
#
#   deploy/backup/clickhouse.sh backup [NAME]  freeze and upload; prints NAME
#                                              (default: the UTC time)
#   deploy/backup/clickhouse.sh restore NAME   download and attach, into the
#                                              tables as they exist (made by
#                                              `parley serve` at start)
#   deploy/backup/clickhouse.sh list           the backups in the bucket
#
# Environment: PARLEY_CH_HTTP (default http://127.0.0.1:8123), PARLEY_CH_DATA
# (the data directory, default /var/lib/clickhouse), PARLEY_CH_DATABASE
# (default "default"), PARLEY_CH_TABLES (default usage_records),
# and the bucket's (deploy/backup/s3.sh): PARLEY_BACKUP_S3_URL
# (http(s)://host:port/bucket), PARLEY_BACKUP_S3_ACCESS_KEY,
# PARLEY_BACKUP_S3_SECRET_KEY, PARLEY_BACKUP_S3_REGION (default us-east-1).
set -euo pipefail

ch_http=${PARLEY_CH_HTTP:-http://127.0.0.1:8123}
ch_data=${PARLEY_CH_DATA:-/var/lib/clickhouse}
db=${PARLEY_CH_DATABASE:-default}
tables=${PARLEY_CH_TABLES:-usage_records}
prefix=clickhouse/$db
. "$(dirname "$0")/s3.sh"

ch() { curl -sS --fail-with-body "$ch_http/" --data-binary "$1"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

case "${1:-}" in
backup)
  name=${2:-$(date -u +%Y%m%dT%H%M%SZ)}
  mkdir -p "$tmp/parts"
  for t in $tables; do
    ch "ALTER TABLE $db.$t FREEZE"
    n=$(cat "$ch_data/shadow/increment.txt")
    src="$ch_data/shadow/$n/data/$db/$t"
    mkdir -p "$tmp/parts/$t"
    # (A table with no parts freezes nothing.)
    if [ -d "$src" ]; then cp -a "$src/." "$tmp/parts/$t/"; fi
    rm -rf "${ch_data:?}/shadow/$n"
  done
  tar -C "$tmp/parts" -cf "$tmp/backup.tar" .
  s3_put "$tmp/backup.tar" "$prefix/$name.tar"
  echo "$name"
  ;;
restore)
  name=${2:?usage: clickhouse.sh restore NAME}
  s3_get "$prefix/$name.tar" "$tmp/backup.tar"
  mkdir -p "$tmp/parts"
  tar -C "$tmp/parts" -xf "$tmp/backup.tar"
  for t in $tables; do
    [ -d "$tmp/parts/$t" ] || continue
    detached="$ch_data/data/$db/$t/detached"
    [ -d "$detached" ] || { echo "clickhouse.sh: $db.$t does not exist (start parley serve once to make it)" >&2; exit 1; }
    owner=$(stat -c %u:%g "$detached")
    for part in "$tmp/parts/$t"/*/; do
      [ -d "$part" ] || continue
      p=$(basename "$part")
      # A part's name goes into SQL: only what ClickHouse names parts with.
      [[ "$p" =~ ^[A-Za-z0-9_-]+$ ]] || { echo "clickhouse.sh: refusing part name $p" >&2; exit 1; }
      rm -rf "${detached:?}/$p"
      cp -a "$part" "$detached/$p"
      chown -R "$owner" "$detached/$p"
      ch "ALTER TABLE $db.$t ATTACH PART '$p'"
    done
  done
  ;;
list)
  s3_list "$prefix/"
  ;;
*)
  sed -n '2,26p' "$0" >&2
  exit 2
  ;;
esac
