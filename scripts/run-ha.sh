#!/usr/bin/env bash
# make run-replicas / make run-sentinel: high availability on one machine, on
# the sandbox (docs/operations.md, "Try it locally"). Starts Debian's
# redis-server on loopback (with `sentinel`: a primary, a replica and three
# redis-sentinel), then two replicas of the exporter with `make run`'s flags on
# localhost:9871 and localhost:9872, sharing that Redis; every process is
# stopped with Ctrl-C (or SIGTERM), and what each printed is under the
# directory it names. Each replica's sandbox simulates its own API: a job
# exists only in the simulation of the replica that created it upstream (the
# gateway's), so after that replica is killed the other ends it `lost` (in
# production both reach the same API, and the job is followed to its end).
#
#   scripts/run-ha.sh BIN replicas|sentinel FLAGS...   (make run's: --mintlify.sandbox ...)
set -euo pipefail
name=run-ha
. "$(dirname "$0")/lib.sh"

[ $# -ge 2 ] || { echo "usage: $0 BIN replicas|sentinel FLAGS..." >&2; exit 2; }
bin=$(realpath "$1")
mode=$2
shift 2
case $mode in replicas | sentinel) ;; *) fail "mode $mode: want replicas or sentinel" ;; esac
command -v redis-server >/dev/null || fail "redis-server not found (Debian: apt-get install redis-server)"
[ "$mode" = replicas ] || command -v redis-sentinel >/dev/null ||
	fail "redis-sentinel not found (Debian: apt-get install redis-sentinel)"

dir=$(mktemp -d "${TMPDIR:-/tmp}/mintlify-ha.XXXXXX")
pids=()
stop() {
	local pid
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	log "stopped; logs in $dir"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start NAME CMD...: runs CMD in the background, its output in $dir/NAME.log.
start() {
	local what=$1
	shift
	"$@" >"$dir/$what.log" 2>&1 &
	pids+=("$!")
}
redis() { # redis PORT [ARGS...]
	local port=$1
	shift
	start "redis-$port" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" "$@"
}

redis 6390
cluster=(--cluster.redis-address=127.0.0.1:6390)
if [ "$mode" = sentinel ]; then
	redis 6391 --replicaof 127.0.0.1 6390
	cluster=(--cluster.redis-sentinel-master-name=mintlify)
	for port in 26390 26391 26392; do
		printf 'port %s\nbind 127.0.0.1\ndir %s\nsentinel monitor mintlify 127.0.0.1 6390 2\nsentinel down-after-milliseconds mintlify 5000\nsentinel failover-timeout mintlify 15000\n' \
			"$port" "$dir" >"$dir/sentinel-$port.conf"
		start "sentinel-$port" redis-sentinel "$dir/sentinel-$port.conf"
		cluster+=(--cluster.redis-sentinel-address=127.0.0.1:$port)
	done
fi
head -c 32 /dev/urandom | base64 >"$dir/forward-secret"
for port in 9871 9872; do
	start "exporter-$port" "$bin" --web.listen-address=localhost:$port \
		"${cluster[@]}" --cluster.advertise-url=http://localhost:$port \
		--cluster.forward-secret-file="$dir/forward-secret" "$@"
done
log "$mode: Redis on 127.0.0.1:6390$([ "$mode" = sentinel ] && echo ' (replica 6391, sentinels 26390-26392, master name mintlify)'); replicas on http://localhost:9871 and http://localhost:9872; logs in $dir; Ctrl-C stops all"
# Until Ctrl-C: a Redis or a replica killed on purpose (the point of the
# demo) leaves the others running.
wait
