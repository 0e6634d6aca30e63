#!/usr/bin/env bash
# make test-loaded: the README's test command (make test) while BUSY processes
# (two per core by default: 4 on two cores) keep every core busy twice over,
# as on a contributor's laptop that is compiling or testing something else. A test that judges a duration by the wall clock, or waits
# on a real process with a short deadline, fails here. The busy processes are
# started and stopped by this script, also when the tests fail or it is
# interrupted.
set -euo pipefail
cd "$(dirname "$0")/.."
name=test-loaded
. scripts/lib.sh

BUSY=${BUSY:-$((2 * $(nproc)))}
MAKE=${MAKE:-make}
pids=()
stop_busy() {
	local pid
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	pids=()
}
trap stop_busy EXIT
trap 'stop_busy; exit 130' INT
trap 'stop_busy; exit 143' TERM

for _ in $(seq "$BUSY"); do
	# A busy loop of the shell itself: no child to leak, one core each.
	( trap - EXIT INT TERM; while :; do :; done ) &
	pids+=("$!")
done
log "$BUSY busy processes (${pids[*]}) on $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
start=$SECONDS
if "$MAKE" test; then
	log "make test passed under load in $((SECONDS - start))s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
else
	rc=$?
	log "FAIL: make test failed under load after $((SECONDS - start))s (exit $rc)"
	exit "$rc"
fi
