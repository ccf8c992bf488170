#!/usr/bin/env bash
# Regenerates src/parley/ (protobuf messages and Connect clients) from proto/ with
# grpcio-tools' protoc and protoc-gen-connect-python, both from PyPI
# (pip install -e '.[dev]').
set -euo pipefail
cd "$(dirname "$0")"
rm -rf src/parley
mkdir -p src/parley/v1
python -m grpc_tools.protoc -I../../proto --python_out=src --pyi_out=src \
  --plugin=protoc-gen-connect-python="$(command -v protoc-gen-connect-python)" --connect-python_out=src \
  ../../proto/parley/v1/*.proto
touch src/parley/__init__.py src/parley/v1/__init__.py
