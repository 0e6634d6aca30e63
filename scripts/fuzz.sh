#!/usr/bin/env bash
# Runs every Go fuzz target (func FuzzXxx in a _test.go file) for FUZZTIME
# each (default 10s), one after the other, on FUZZPARALLEL workers (default
# 2). A crasher fails the run and is written by go test to
# PKG/testdata/fuzz/FuzzXxx/: commit it, it then runs as a regression case
# with every `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-10s}
FUZZPARALLEL=${FUZZPARALLEL:-2}
# Minimizing each new input (go test default: 60s) would eat the whole
# budget on the large state file inputs.
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-1s}

mapfile -t targets < <(grep -rE --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]+\(' . |
	sed -E 's#^\./(.*)/[^/]+\.go:func (Fuzz[A-Za-z0-9_]+)\($#\1 \2#; s#^\./[^/]+\.go:func (Fuzz[A-Za-z0-9_]+)\($#. \1#' | sort -u)
if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz: no fuzz targets found" >&2
	exit 1
fi
start=$(date +%s)
# corpus lists the inputs go test keeps for a target: a crasher adds one.
corpus() { ls "$1/testdata/fuzz/$2" 2>/dev/null || true; }
fuzz() {
	go test -run '^$' -fuzz "^${2}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" -parallel "$FUZZPARALLEL" "./$1" >/tmp/fuzz.$$.log 2>&1
}
for t in "${targets[@]}"; do
	read -r pkg fn <<<"$t"
	echo "fuzz: ./$pkg $fn for $FUZZTIME"
	before=$(corpus "$pkg" "$fn")
	if ! fuzz "$pkg" "$fn"; then
		# Go's fuzzer sometimes ends a run with "context deadline exceeded"
		# when the time is up while a worker is busy on a loaded machine:
		# no input failed, none was written. That is tried once more; a
		# crasher is always written and always fails.
		if [ "$(corpus "$pkg" "$fn")" = "$before" ] && grep -q 'context deadline exceeded' /tmp/fuzz.$$.log; then
			echo "fuzz: $fn ended on the fuzzer's own deadline without a failing input; running it again"
			fuzz "$pkg" "$fn" && { tail -n 3 /tmp/fuzz.$$.log | grep -E 'execs|ok' | tail -n 2 || true; continue; }
		fi
		cat /tmp/fuzz.$$.log
		rm -f /tmp/fuzz.$$.log
		echo "fuzz: $fn in ./$pkg failed; the crasher is in ./$pkg/testdata/fuzz/$fn/" >&2
		exit 1
	fi
	tail -n 3 /tmp/fuzz.$$.log | grep -E 'execs|ok' | tail -n 2 || true
done
rm -f /tmp/fuzz.$$.log
echo "fuzz: ${#targets[@]} targets, $(( $(date +%s) - start ))s"
