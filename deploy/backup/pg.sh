#!/usr/bin/env bash
# PostgreSQL backups for Parley with pgBackRest: base backups and the WAL
# archive in an S3 bucket, a synchronous WAL stream (pg_receivewal) so that no
# committed transaction is lost with the primary (RPO 0), and restore to the
# latest point or to a time. Runbook: docs/backup.md.
#
#   deploy/backup/pg.sh backup [full|diff|incr]  a base backup (default: incr,
#                                                full when there is none yet)
#   deploy/backup/pg.sh stream                   run pg_receivewal into
#                                                $PARLEY_WAL_STREAM_DIR as a
#                                                synchronous standby (foreground;
#                                                makes its slot when missing)
#   deploy/backup/pg.sh restore [TIME]           restore into the stanza's data
#                                                directory (absent or empty): to
#                                                the end of the archive and the
#                                                stream, or to TIME
#                                                ("2026-12-06 05:00:00+00")
#   deploy/backup/pg.sh wal-fetch FILE PATH      restore_command: the archive,
#                                                else the stream
#   deploy/backup/pg.sh info                     the backups and the archive
#
# Configuration is pgBackRest's own (PGBACKREST_CONFIG, PGBACKREST_STANZA, or
# /etc/pgbackrest/pgbackrest.conf), libpq's for the stream (PGHOST, PGPORT,
# PGUSER), and PARLEY_WAL_STREAM_DIR (a directory on another disk or host
# than the data directory; unset: no stream, RPO is the archive_timeout).
# Run as root or as the postgres user: the commands run as postgres.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
stream_dir=${PARLEY_WAL_STREAM_DIR:-}
slot=${PARLEY_WAL_STREAM_SLOT:-parley_wal_stream}

as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }

cmd=${1:-}
shift || true
case "$cmd" in
backup)
  type=${1:-incr}
  # pgBackRest makes a full backup when an incremental has nothing to build on.
  as_pg pgbackrest --type="$type" backup
  ;;
stream)
  [ -n "$stream_dir" ] || { echo "pg.sh: PARLEY_WAL_STREAM_DIR is not set" >&2; exit 2; }
  mkdir -p "$stream_dir"
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$stream_dir"
  bin=$(pg_bin)
  # --synchronous flushes each write at once and reports it, so with
  # synchronous_standby_names = 'pg_receivewal' a commit returns only once
  # its WAL is on the stream's disk. The slot keeps the primary's WAL until
  # the stream has it; a restored primary has no slot (a base backup leaves
  # slots out), so each reconnection makes it again when missing.
  # After a restore to an earlier point (a time, or the archive alone), the
  # newest WAL here belongs to a history the server abandoned, and the
  # server refuses to stream from it: that WAL is moved into abandoned-TIME/
  # (kept: wal-fetch reads it last, for a restore along the old history)
  # and streaming starts afresh. (The refusal's message is empty or names
  # the history, depending on the version.)
  errf=$(mktemp)
  trap 'rm -f "$errf"' EXIT
  refused=0
  while :; do
    if as_pg "$bin/pg_receivewal" --slot="$slot" --create-slot --if-not-exists --no-password; then
      as_pg "$bin/pg_receivewal" -D "$stream_dir" --slot="$slot" --synchronous --no-loop --no-password 2> >(tee "$errf" >&2) || true
      if grep -Eq 'START_REPLICATION": *($|.*history)' "$errf"; then refused=$((refused + 1)); else refused=0; fi
      if [ "$refused" -ge 3 ]; then
        aside="$stream_dir/abandoned-$(date -u +%Y%m%dT%H%M%SZ)"
        echo "pg.sh stream: the server refuses to stream from this directory's newest WAL (another history); moving it to $aside" >&2
        mkdir -p "$aside"
        find "$stream_dir" -maxdepth 1 -type f -name '0*' -exec mv {} "$aside/" \;
        [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$aside"
        refused=0
      fi
    fi
    sleep 1
  done
  ;;
wal-fetch)
  [ $# = 2 ] || { echo "usage: pg.sh wal-fetch FILE PATH" >&2; exit 2; }
  # pgBackRest says 1 for a file the archive does not have; anything else
  # (the bucket unreachable, bad credentials) aborts the recovery (an exit
  # status above 125) rather than letting it end early and promote.
  rc=0
  pgbackrest archive-get "$1" "$2" || rc=$?
  [ "$rc" = 0 ] && exit 0
  [ "$rc" = 1 ] || { echo "pg.sh wal-fetch: pgbackrest archive-get $1 failed ($rc)" >&2; exit 255; }
  if [ -n "$stream_dir" ]; then
    # A finished segment the archive does not have yet, or the last,
    # unfinished one (.partial: pg_receivewal's name for the segment it was
    # writing; recovery replays it up to its last whole record); then WAL
    # set aside from an abandoned history, newest first.
    for f in "$stream_dir/$1" "$stream_dir/$1.partial" $(ls -d "$stream_dir"/abandoned-*/ 2>/dev/null | sort -r | sed "s#\$#$1#"); do
      [ -f "$f" ] && exec cp "$f" "$2"
    done
  fi
  exit 1
  ;;
restore)
  # restore_command carries this script's configuration (paths without spaces).
  env_prefix="PGBACKREST_CONFIG=${PGBACKREST_CONFIG:-/etc/pgbackrest/pgbackrest.conf} PGBACKREST_STANZA=${PGBACKREST_STANZA:-} PARLEY_WAL_STREAM_DIR=$stream_dir"
  args=(--recovery-option="restore_command=$env_prefix $here/pg.sh wal-fetch %f %p")
  if [ -n "${1:-}" ]; then args+=(--type=time --target="$1" --target-action=promote); fi
  as_pg pgbackrest "${args[@]}" restore
  ;;
info)
  as_pg pgbackrest info
  ;;
*)
  sed -n '2,30p' "$0" >&2
  exit 2
  ;;
esac
