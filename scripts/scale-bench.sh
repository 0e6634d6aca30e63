#!/usr/bin/env bash
# Measures the built exporter at the scale of issue 32 (10 organizations ×
# 10 projects, every source, windows 1d/7d/30d, 1,000 paths a project;
# then one project of 10,000 paths) against a floor server in the same run,
# and a restart after kill -9 on the state directory:
# see internal/scalebench (a test binary, tag scalebench). Prints Markdown (the source of BENCHMARKS.md's
# "Scrapes at scale, the whole binary"). Extra arguments go to scalebench
# (-orgs, -projects, -paths, -big-paths, -budget, -sequential, -concurrent, -restart-only,
# -cpu-scrapes, -big-only: the one project of -big-paths paths alone).
#   scripts/scale-bench.sh [scalebench flags]
# Listens on 127.0.0.1 only. Not part of CI (timings depend on the machine).
set -eu
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
make --no-print-directory build BIN="$dir/mintlify_exporter" >/dev/null
go test -c -tags scalebench -o "$dir/scalebench" ./internal/scalebench
"$dir/scalebench" -test.run '^TestScale$' -test.timeout 0 -exporter "$dir/mintlify_exporter" "$@"
