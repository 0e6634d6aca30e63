#!/usr/bin/env bash
# make conformance (issue 44, 3): the exporter and its gateway judged
# against the API's vendored reference (internal/conformance/reference/) by tools
# nobody here wrote, pinned below and installed from the npm registry into
# $CONFORMANCE_NPM (default .build/npm, kept between runs):
#  1. every source against `prism mock -d` (random schema-valid answers):
#     every walk ok, nothing absurd in /metrics;
#  2. the exporter and its gateway against the fake behind `prism proxy
#     --errors`: no request or answer the reference refuses, over every
#     endpoint the client calls;
#  3. requests Portman generates from the reference of the routes the
#     gateway serves, run by Newman through a validating Prism: the
#     failures are listed, and must be exactly the known ones.
# Without node and npm it skips with a message, except under CI=true.
# RUN (a go test -run pattern) picks tests; extra arguments go to go test.
set -euo pipefail
cd "$(dirname "$0")/.."
name=conformance
# shellcheck source=lib.sh
. scripts/lib.sh

PRISM_VERSION=5.16.0
PORTMAN_VERSION=1.33.0
NEWMAN_VERSION=6.2.2

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	[ "${CI:-}" = true ] && fail "node and npm are needed (CI=true: not skipped)"
	log "SKIP: node and npm are not installed (they come from the machine's packages); nothing was judged"
	exit 0
fi

npm_dir=${CONFORMANCE_NPM:-$PWD/.build/npm}
stamp="$npm_dir/.installed-prism-$PRISM_VERSION-portman-$PORTMAN_VERSION-newman-$NEWMAN_VERSION"
if [ ! -e "$stamp" ]; then
	log "installing @stoplight/prism-cli@$PRISM_VERSION @apideck/portman@$PORTMAN_VERSION newman@$NEWMAN_VERSION into $npm_dir"
	mkdir -p "$npm_dir"
	npm install --prefix "$npm_dir" --no-audit --no-fund --no-save --loglevel=error \
		"@stoplight/prism-cli@$PRISM_VERSION" "@apideck/portman@$PORTMAN_VERSION" "newman@$NEWMAN_VERSION" >&2 ||
		fail "npm install"
	touch "$stamp"
fi

# The harness's own tests (each judge can fail) run first, then the parts.
go vet -tags conformance ./internal/conformance/
export CONFORMANCE_NPM=$npm_dir
start=$SECONDS
go test -tags conformance -count=1 -timeout 20m -v -run "${RUN:-.}" "$@" ./internal/conformance/ 2>&1 |
	grep -v '^=== \(RUN\|PAUSE\|CONT\|NAME\)' || fail "see the test output above"
log "took $((SECONDS - start))s"
