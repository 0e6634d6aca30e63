#!/usr/bin/env bash
# Measures what one exporter carries: for N projects (300 simulated pages
# each) and the windows 1d, 7d and 30d, against the fake API without its
# analytics quota (internal/fakeapi/cmd/fakeapi) and a budget that does not
# hold walks back, it reports the series served, how long until every
# (project, window) was walked, a cached scrape as Prometheus asks for it
# (OpenMetrics, gzip) and as plain text, and the resident memory after a few
# scrapes. Prints a Markdown table, the source of the figures in README.md's
# "Scale-out and availability".
#   scripts/measure-scale.sh [N ...]          (default: 1 10 50 100)
# Listens on 127.0.0.1 only. Not part of CI (timings depend on the machine).
set -u
cd "$(dirname "$0")/.." || exit 1
make --no-print-directory build >/dev/null || exit 1
fakebin=$(mktemp)
go build -o "$fakebin" ./internal/fakeapi/cmd/fakeapi || exit 1
fport=$((20000 + RANDOM % 20000))
"$fakebin" -addr "127.0.0.1:$fport" -paths 300 >/dev/null 2>&1 &
fake=$!
out=$(mktemp)
state=$(mktemp -d) # the analytics ledger, out of the working directory
trap 'kill $fake 2>/dev/null; rm -rf "$fakebin" "$out" "$state"' EXIT
until curl -s -o /dev/null "http://127.0.0.1:$fport/"; do sleep 0.1; done
om='Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5'
echo "| projects | series | all walked after | cached scrape, OpenMetrics + gzip | cached scrape, plain text | RSS after 5 scrapes |"
echo "|---|---|---|---|---|---|"
for n in ${@:-1 10 50 100}; do
	args=()
	for i in $(seq "$n"); do args+=("--mintlify.project=p$i"); done
	port=$((20000 + RANDOM % 20000))
	start=$(date +%s.%N)
	MINTLIFY_API_KEY=mint_measure ./mintlify_exporter --mintlify.api-url="http://127.0.0.1:$fport" \
		--mintlify.analytics-budget=100000 --analytics.window=1d --analytics.window=7d --analytics.window=30d \
		--web.listen-address="127.0.0.1:$port" --log.level=warn --agent.state-file="$state/agent.db" \
		--analytics.source=visitors --analytics.site-totals-interval=0s "${args[@]}" >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 1200); do # at most a minute
		c=$(curl -fs "http://127.0.0.1:$port/metrics" 2>/dev/null | grep -c '^mintlify_analytics_refresh_success{.*scope="pages",source="visitors".*} 1$')
		[ "$c" -ge $((n * 3)) ] && break
		sleep 0.05
	done
	walked=$(echo "$(date +%s.%N) - $start" | bc)
	for _ in 1 2 3; do curl -fs -o /dev/null --compressed -H "$om" "http://127.0.0.1:$port/metrics"; done
	gz=$(curl -fs -o /dev/null -H 'Accept-Encoding: gzip' -H "$om" -w '%{time_total}' "http://127.0.0.1:$port/metrics")
	plain=$(curl -fs -o "$out" -w '%{time_total}' "http://127.0.0.1:$port/metrics")
	series=$(grep -vc '^#' "$out")
	rss=$(awk '/^VmRSS:/ {printf "%.0f MiB", $2/1024}' "/proc/$pid/status")
	kill "$pid"
	wait "$pid"
	printf '| %d | %d | %.2f s | %.4f s | %.3f s | %s |\n' "$n" "$series" "$walked" "$gz" "$plain" "$rss"
done
