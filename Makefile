# Parley's tasks. `make test` is the README's test command; `.ci/run` runs it
# after installing what is missing.

GO ?= go

.PHONY: all build generate lint breaking vet test test-go test-scale services services-down run clean web web-check

all: build

build:
	$(GO) build -o bin/parley ./server/cmd/parley

## generate: rewrite gen/ and clients/ts/src/gen from proto/ (local plugins only)
generate: clients/ts/node_modules
	$(GO) tool buf generate

clients/ts/node_modules: clients/ts/package.json
	cd clients/ts && npm ci --no-audit --no-fund
	@touch $@

## web: rebuild the browser app into server/webapp/dist (committed; the binary embeds it)
web: clients/web/node_modules
	cd clients/web && npm run build

clients/web/node_modules: clients/web/package.json
	cd clients/web && npm ci --no-audit --no-fund
	@touch $@

## web-check: fail if the committed server/webapp/dist is not what `make web` builds
web-check: web
	@if [ -n "$$(git status --porcelain -- server/webapp/dist)" ]; then \
		git status --porcelain -- server/webapp/dist; \
		echo "server/webapp/dist is stale: run 'make web' and commit" >&2; exit 1; fi

## lint: buf lint on the protos
lint:
	$(GO) tool buf lint

## breaking: buf breaking against the previous commit (skipped when it has no protos)
breaking:
	@if git rev-parse -q --verify HEAD~1 >/dev/null && git cat-file -e HEAD~1:proto 2>/dev/null; then \
		$(GO) tool buf breaking --against '.git#ref=HEAD~1,subdir=proto'; \
	else echo "buf breaking: no previous commit with protos, skipped"; fi

vet:
	$(GO) vet ./...

## test: every test (unit, conformance suites, end-to-end against the real binary)
test: test-go test-web test-ts test-python

test-go:
	$(GO) test -race -count=1 -timeout 20m ./...

## test-ts: the TypeScript SDK (clients/ts) against the real binary
test-ts: clients/ts/node_modules
	cd clients/ts && npm test

## test-python: the Python SDK (clients/python, in its own venv) against the real binary
test-python: clients/python/.venv
	cd clients/python && .venv/bin/python -m pytest -q

clients/python/.venv: clients/python/pyproject.toml
	python3 -m venv clients/python/.venv
	clients/python/.venv/bin/pip install -q -e 'clients/python[dev]'
	@touch $@

## test-web: the web app in headless Chromium (/usr/bin/chromium) against the real binary;
## screenshots and measurements go to test-artifacts/web/
test-web: clients/web/node_modules
	cd clients/web && node --test --test-concurrency=1 e2e/

## test-scale: start the real servers (scripts/services.sh) and run every test,
## the scale backends' conformance suites included
test-scale:
	scripts/services.sh up
	eval "$$(scripts/services.sh env)" && $(GO) test -race -count=1 -timeout 20m ./...

## services / services-down: the scale-mode servers on loopback ports
services:
	scripts/services.sh up
services-down:
	scripts/services.sh down

## run: the embedded default, on http://127.0.0.1:8080
run:
	$(GO) run ./server/cmd/parley serve --insecure-cookies

clean:
	rm -rf bin parley-data
