#!/usr/bin/env bash
# Cassandra / ScyllaDB snapshots of Parley's messages keyspace: nodetool
# snapshot hard-links every table's SSTables (after a flush) without
# stopping writes, the snapshot goes to the S3 bucket as one tar per node,
# and a restore loads each table's SSTables back with nodetool import (rows
# already there stay; the newest write of a cell wins). Run it on every node
# (it reads the node's data directory). Runbook: docs/backup.md.
#
#   deploy/backup/cassandra.sh snapshot KEYSPACE [NAME]  snapshot, upload,
#                                                        clear; prints NAME
#   deploy/backup/cassandra.sh restore KEYSPACE NAME     download and import
#                                                        into the tables as
#                                                        they exist
#   deploy/backup/cassandra.sh list KEYSPACE             this node's backups
#
# Environment: PARLEY_NODETOOL (the nodetool command, default "nodetool"),
# PARLEY_CASSANDRA_DATA (the data directory, default /var/lib/cassandra/data),
# PARLEY_BACKUP_NODE (this node's name in the bucket, default the host name),
# and the bucket's (deploy/backup/s3.sh).
set -euo pipefail

nodetool=${PARLEY_NODETOOL:-nodetool}
data=${PARLEY_CASSANDRA_DATA:-/var/lib/cassandra/data}
node=${PARLEY_BACKUP_NODE:-$(hostname)}
. "$(dirname "$0")/s3.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmd=${1:-}
ks=${2:-}
case "$cmd" in
snapshot)
  [ -n "$ks" ] || { echo "usage: cassandra.sh snapshot KEYSPACE [NAME]" >&2; exit 2; }
  name=${3:-$(date -u +%Y%m%dT%H%M%SZ)}
  $nodetool snapshot -t "$name" "$ks" >/dev/null
  # The snapshot's hard links go from the node however this ends.
  trap '$nodetool clearsnapshot -t "$name" -- "$ks" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/tables"
  # data/KEYSPACE/TABLE-ID/snapshots/NAME/ → TABLE/
  for dir in "$data/$ks"/*/snapshots/"$name"; do
    [ -d "$dir" ] || continue
    table=$(basename "$(dirname "$(dirname "$dir")")")
    cp -a "$dir" "$tmp/tables/${table%-*}"
  done
  tar -C "$tmp/tables" -cf "$tmp/snapshot.tar" .
  s3_put "$tmp/snapshot.tar" "cassandra/$node/$ks/$name.tar"
  echo "$name"
  ;;
restore)
  name=${3:?usage: cassandra.sh restore KEYSPACE NAME}
  s3_get "cassandra/$node/$ks/$name.tar" "$tmp/snapshot.tar"
  mkdir -p "$tmp/tables"
  tar -C "$tmp/tables" -xf "$tmp/snapshot.tar"
  chmod -R a+rX "$tmp"
  for dir in "$tmp/tables"/*/; do
    [ -d "$dir" ] || continue
    table=$(basename "$dir")
    # (The schema files a snapshot keeps are not SSTables.)
    rm -f "$dir/manifest.json" "$dir/schema.cql"
    # (Copied, not moved: the node's user needs only to read the directory.)
    out=$($nodetool import --copy-data "$ks" "$table" "$dir" 2>&1) || { echo "$out" >&2; exit 1; }
    if grep -qi "failed" <<<"$out"; then echo "$out" >&2; exit 1; fi
  done
  ;;
list)
  s3_list "cassandra/$node/$ks/"
  ;;
*)
  sed -n '2,20p' "$0" >&2
  exit 2
  ;;
esac
