#!/usr/bin/env bash
# Ory Hydra, a certified OpenID Connect provider, for the single sign-on tests.
#
#   scripts/hydra.sh build   # the hydra binary (with SQLite, so DSN=memory works), cached
#   scripts/hydra.sh env     # export PARLEY_TEST_HYDRA=... (eval it)
#
# The binary is built from tools/hydra (a Go module of its own that names Hydra
# as a tool) into $PARLEY_HYDRA_DIR (default /tmp/parley-hydra), keyed by the
# version, so a second run on the same machine reuses it (about 1–3 min of
# 2 cores from cold). The tests start and stop their own Hydra, in memory.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
MOD="$HERE/../tools/hydra"
VERSION="$(cd "$MOD" && go list -m -f '{{.Version}}' github.com/ory/hydra/v2)"
ROOT="${PARLEY_HYDRA_DIR:-/tmp/parley-hydra}"
BIN="$ROOT/$VERSION-$(uname -m)/hydra"

case "${1:-}" in
build)
  if [ -x "$BIN" ]; then
    echo "hydra.sh: $BIN (cached)" >&2
    exit 0
  fi
  mkdir -p "$(dirname "$BIN")"
  echo "hydra.sh: building Hydra $VERSION into $BIN" >&2
  (cd "$MOD" && CGO_ENABLED=1 go build -tags sqlite -o "$BIN.tmp" github.com/ory/hydra/v2)
  mv "$BIN.tmp" "$BIN"
  ;;
env)
  echo "export PARLEY_TEST_HYDRA=$BIN"
  ;;
*)
  echo "usage: scripts/hydra.sh build|env" >&2
  exit 2
  ;;
esac
