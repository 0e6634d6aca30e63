#!/usr/bin/env bash
# Measures what one exporter carries on the sandbox: for N projects (each a
# few hundred simulated pages) and the given windows, the series served, the
# time of a cold scrape (every (project, window) fetched) and of a cached one,
# and the resident memory after a few scrapes. Prints a Markdown table, the
# source of the figures in README.md's "Scale-out and availability".
#   scripts/measure-scale.sh [N ...]          (default: 1 10 50 100)
# Listens on 127.0.0.1 only. Not part of CI (timings depend on the machine).
set -euo pipefail
cd "$(dirname "$0")/.."
make --no-print-directory build >/dev/null
windows=(--visitors.window=1d --visitors.window=7d --visitors.window=30d)
echo "| projects | windows | series | paths (per project x window) | cold scrape | cached scrape | RSS after 5 scrapes |"
echo "|---|---|---|---|---|---|---|"
for n in "${@:-1 10 50 100}"; do
	for n1 in $n; do
		args=()
		for i in $(seq "$n1"); do args+=("--mintlify.project=p$i"); done
		port=$((20000 + RANDOM % 20000))
		./mintlify_exporter --mintlify.sandbox "${windows[@]}" --web.listen-address=127.0.0.1:$port \
			--log.level=warn "${args[@]}" 2>/dev/null &
		pid=$!
		until curl -fs -o /dev/null "http://127.0.0.1:$port/-/ready"; do sleep 0.1; done
		cold=$(curl -fs -o /tmp/measure-scale.$$ -w '%{time_total}' -H 'X-Prometheus-Scrape-Timeout-Seconds: 60' "http://127.0.0.1:$port/metrics")
		for _ in 1 2 3; do curl -fs -o /dev/null "http://127.0.0.1:$port/metrics"; done
		warm=$(curl -fs -o /tmp/measure-scale.$$ -w '%{time_total}' "http://127.0.0.1:$port/metrics")
		series=$(grep -vc '^#' /tmp/measure-scale.$$)
		paths=$(awk '/^mintlify_visitors_paths{/ {print $2; exit}' /tmp/measure-scale.$$)
		rss=$(awk '/^VmRSS:/ {printf "%.0f MiB", $2/1024}' /proc/$pid/status)
		kill $pid
		wait $pid || true
		printf '| %d | 3 (1d, 7d, 30d) | %d | %s | %.2f s | %.3f s | %s |\n' "$n1" "$series" "$paths" "$cold" "$warm" "$rss"
	done
done
rm -f /tmp/measure-scale.$$
