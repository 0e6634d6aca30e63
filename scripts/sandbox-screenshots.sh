#!/usr/bin/env bash
# Regenerates the status page's pictures of the README and
# docs/operations.md from the sandbox, as `make run` shows it: builds the
# exporter, runs it on the sandbox with the Makefile's run flags on a free
# loopback port in a temporary directory, submits one agent job, waits until
# every refresh has a result, photographs the page at a desktop's and a
# phone's size with scripts/status-screenshot.sh, and stops the exporter by
# its PID.
#
#   scripts/sandbox-screenshots.sh [OUTDIR]     # default: docs
#
# Needs Go, curl, and chromium (Debian: apt-get install chromium).
set -euo pipefail
name=sandbox-screenshots
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
root=$(dirname "$here")
out=$(cd "${1:-$root/docs}" && pwd)
command -v curl >/dev/null || fail "curl not found"

work=$(mktemp -d)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

log "building the exporter"
make -s -C "$root" build BIN="$work/mintlify_exporter" >/dev/null || fail "make build"
# The run target's flags, as `make run` passes them (its address aside).
flags=$(make -s -C "$root" -n run RUN_ADDR=ADDR BIN=BIN 2>/dev/null | sed -e ':a' -e '/\\$/N; s/\\\n//; ta' |
	grep -F './BIN ' | tail -1 | sed 's|^.*\./BIN ||; s|--web.listen-address=ADDR||')
[ -n "$flags" ] || fail "cannot read the Makefile's run target"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
base=http://127.0.0.1:$port
# shellcheck disable=SC2086 # the run target's flags, one word each
(cd "$work" && exec ./mintlify_exporter $flags --web.listen-address=127.0.0.1:$port) >"$work/log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -fs -o /dev/null "$base/-/ready" && break; sleep 0.2; done
curl -fs -o /dev/null "$base/-/ready" || { cat "$work/log" >&2; fail "the exporter did not start"; }

# One job that stays active, so the jobs table shows one.
curl -fsS -o /dev/null -H 'Content-Type: application/json' -d '{"prompt":"Document the new endpoint #fake:pr:1h"}' \
	"$base/api/v2/agent/acme-docs/job" || fail "submitting a job"

log "waiting until every refresh has a result (a minute at most)"
for _ in $(seq 120); do
	pending=$(curl -fsS "$base/?format=json" | python3 -c 'import json,sys; print(sum(1 for d in json.load(sys.stdin)["demands"] if not d["result"]))')
	[ "$pending" = 0 ] && break
	sleep 0.5
done
[ "$pending" = 0 ] || log "still $pending refreshes without a result: photographed as they are"

"$here/status-screenshot.sh" "$base/" "$out/status-page.png" 1280x1000
"$here/status-screenshot.sh" "$base/" "$out/status-page-phone.png" 390x844
