# Parley's tasks. `make test` is the README's test command; `.ci/run` runs it
# after installing the system-wide things make does not (Chromium, the
# scale-mode servers).

GO ?= go
# Recipes use bash: pipefail and PIPESTATUS keep a test's exit status
# through the tee to its log.
SHELL := /bin/bash
# make test leaves each suite's full output here, for scripts/test-summary.sh.
TESTLOGS := test-artifacts/logs
# Extra flags for scripts/test-summary.sh: --strict (as .ci/run passes) fails
# when a test was skipped for a missing dependency.
SUMMARY ?=

.PHONY: all build generate lint breaking vet test test-go test-fast test-web test-ts test-python test-scale e2e-deps openai-py-venv chromium region-deps services services-down run clean web web-check docs-config

all: build

## build: bin/parley. -v lists each package as it compiles: the first build
## from a cold cache compiles a few hundred (several minutes on 2 cores), later
## ones take seconds and list nothing. scripts/heartbeat.sh prints the elapsed
## time every 30 s, since some packages (modernc.org/libc, SQLite) compile for
## minutes without a line.
build:
	@scripts/heartbeat.sh 30 $(GO) build -v -o bin/parley ./server/cmd/parley

## generate: rewrite gen/ and clients/ts/src/gen from proto/ (local plugins only)
## docs-config: rewrite docs/config.md from the flag sets (a test in server/cmd/parley fails when it differs)
docs-config:
	$(GO) test ./server/cmd/parley -run TestConfigDoc -count=1 -update

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

## test: every test (unit, conformance suites, end-to-end against the real binary,
## the SDKs, the browser app), installing the SDKs the tests drive first; every
## suite runs even when one fails, then scripts/test-summary.sh says what was
## skipped and why. Full logs in test-artifacts/logs/.
test: e2e-deps clients/ts/node_modules clients/web/node_modules clients/python/.venv
	@rm -rf $(TESTLOGS) && mkdir -p $(TESTLOGS); status=0; \
	for suite in test-go test-web test-ts test-python; do \
		$(MAKE) --no-print-directory $$suite || { status=1; echo "*** $$suite failed" >&2; }; \
	done; \
	scripts/test-summary.sh $(SUMMARY) $(TESTLOGS) || status=1; \
	exit $$status

## test-go: the Go tests (go test -v into test-artifacts/logs/go.log; the screen
## shows what go test prints without -v, plus skips and test logs)
test-go: e2e-deps
	@mkdir -p $(TESTLOGS)
	$(GO) test -race -count=1 -timeout 20m -v ./... 2>&1 | tee $(TESTLOGS)/go.log | \
		grep --line-buffered -v -E '^(=== (RUN|PAUSE|CONT|NAME) |[[:space:]]*--- PASS: |PASS$$)'; \
		exit $${PIPESTATUS[0]}

## test-fast: the quick tier, for feedback while changing code: the unit tests and
## the store conformance suites on SQLite, without -race, the end-to-end tests that
## start the binary (server/e2e, clients/go) or the other stores' services (every
## PARLEY_TEST_* variable is unset for it); under two minutes on two cores
test-fast:
	env $$(env | sed -n 's/^\(PARLEY_TEST_[A-Z_]*\)=.*/-u \1/p') \
		$(GO) test -timeout 5m $$($(GO) list ./... | grep -v -e '/server/e2e$$' -e '/clients/go$$')

## e2e-deps: what the end-to-end tests drive besides the binary: the official OpenAI
## Node SDK (server/e2e/openai-sdk) and the OpenAI and Anthropic Python SDKs with
## langchain-openai (server/e2e/openai-py/.venv)
e2e-deps: server/e2e/openai-sdk/node_modules openai-py-venv server/e2e/coding-agents/node_modules

server/e2e/openai-sdk/node_modules: server/e2e/openai-sdk/package.json server/e2e/openai-sdk/package-lock.json
	cd server/e2e/openai-sdk && npm ci --no-audit --no-fund
	@touch $@

# Claude Code and Codex CLI, pinned, for the coding-agent e2e tests: their
# native binaries are the platform packages (about 800 MB together); no
# install script runs.
server/e2e/coding-agents/node_modules: server/e2e/coding-agents/package.json server/e2e/coding-agents/package-lock.json
	cd server/e2e/coding-agents && npm ci --no-audit --no-fund --ignore-scripts
	@touch $@

## openai-py-venv: rebuilt only when the venv is missing or requirements.txt
## changed since it was made (the venv keeps a copy to compare)
openai-py-venv:
	@cd server/e2e/openai-py && \
	if ! cmp -s requirements.txt .venv/requirements.txt; then \
		echo "installing the Python SDKs for the compatibility tests (server/e2e/openai-py/.venv)"; \
		rm -rf .venv && python3 -m venv .venv && .venv/bin/pip install -q -r requirements.txt && \
			cp requirements.txt .venv/requirements.txt; \
	fi

## chromium: the browser of the web app's tests, from Debian (needs root or sudo;
## make test skips those tests without it, and says so)
chromium:
	@command -v chromium >/dev/null || { SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO="sudo"; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }
	chromium --version

## region-deps: BIRD 2 (bird, birdc) for the region health checker's BGP test in two
## network namespaces, and promtool (Debian package prometheus) for the deploy/ rules
## and dashboard checks; from Debian (needs root or sudo; the tests skip without them)
region-deps:
	@{ command -v bird >/dev/null || [ -x /usr/sbin/bird ]; } && command -v promtool >/dev/null || { SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO="sudo"; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends bird2 prometheus >/dev/null; }
	@PATH="$$PATH:/usr/sbin" bird --version 2>&1 | head -1; promtool --version | head -1

## test-ts: the TypeScript SDK (clients/ts) against the real binary
test-ts: clients/ts/node_modules
	@mkdir -p $(TESTLOGS)
	cd clients/ts && npm test 2>&1 | tee ../../$(TESTLOGS)/ts.log; exit $${PIPESTATUS[0]}

## test-python: the Python SDK (clients/python, in its own venv) against the real binary
test-python: clients/python/.venv
	@mkdir -p $(TESTLOGS)
	cd clients/python && .venv/bin/python -m pytest -q -rs 2>&1 | tee ../../$(TESTLOGS)/python.log; exit $${PIPESTATUS[0]}

clients/python/.venv: clients/python/pyproject.toml
	python3 -m venv clients/python/.venv
	clients/python/.venv/bin/pip install -q -e 'clients/python[dev]'
	@touch $@

## test-web: the web app in headless Chromium (/usr/bin/chromium) against the real binary;
## screenshots and measurements go to test-artifacts/web/
test-web: clients/web/node_modules
	@mkdir -p $(TESTLOGS)
	cd clients/web && node --test --test-concurrency=1 e2e/ 2>&1 | tee ../../$(TESTLOGS)/web.log; exit $${PIPESTATUS[0]}

## test-scale: start the real servers (scripts/services.sh) and run every test,
## the scale backends' conformance suites included
test-scale:
	scripts/services.sh up
	eval "$$(scripts/services.sh env)" && $(MAKE) --no-print-directory test

## services / services-down: the scale-mode servers on loopback ports
services:
	scripts/services.sh up
services-down:
	scripts/services.sh down

## run: the embedded default, on http://127.0.0.1:8080 (the built binary: Ctrl-C
## stops it, where stopping `go run` can leave the server running)
run: build
	bin/parley serve --insecure-cookies

clean:
	rm -rf bin parley-data
