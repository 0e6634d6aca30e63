#!/usr/bin/env bash
# Builds the container image and runs the image's own files the way a
# hardened container runs them, without a registry or a container runtime:
#
#  1. a stand-in for the base image (CA bundle, passwd entry 65532 nonroot,
#     /tmp with mode 1777) is built from scratch and tagged with the base's
#     name, so that `podman build --pull=never` of the Dockerfile works offline;
#  2. the image is built with podman (vfs storage, private to this run) from
#     the binary `make image-binary` builds, and its config is checked
#     (user 65532, entrypoint, working directory);
#  3. its root filesystem is mounted read-only (as Kubernetes'
#     readOnlyRootFilesystem does), a state volume and a /tmp volume are bound
#     in, and /bin/mintlify_exporter runs as uid 65532 through
#     `chroot --userspec`: it must serve mintlify_ metrics, accept a job on the
#     gateway, write its state file and analytics ledger only in the state volume, and leave the
#     root unchanged; the sandbox's temporary state must go to /tmp and fail
#     loudly without a writable /tmp.
#
# Needs root (podman storage, mounts, chroot). Installs podman and
# ca-certificates with apt-get when missing. Exits non-zero on any failure.
# Listens on 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."

name=image-check
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

[ "$(id -u)" = 0 ] || fail "must run as root (podman storage, bind mounts, chroot)"

need=()
command -v podman >/dev/null || need+=(podman)
[ -s /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
if [ ${#need[@]} -gt 0 ]; then
	log "installing ${need[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

BASE=gcr.io/distroless/static-debian12:nonroot # the Dockerfile's default BASE
IMAGE=localhost/mintlify_exporter:image-check
ARCH=$(go env GOARCH)
WORK=$(mktemp -d /tmp/mintlify-image-check.XXXXXX)
PODMAN=(podman --root "$WORK/storage" --runroot "$WORK/runroot" --storage-driver vfs
	--events-backend file --cgroup-manager cgroupfs)
ROOT=$WORK/rootfs # a copy of the image's files
RO=$WORK/ro       # the same, mounted read-only, with the volumes bound in
STATE=$WORK/state # the state volume, at /var/lib/mintlify_exporter
TMPV=$WORK/tmp    # the /tmp volume (an emptyDir on Kubernetes)
PID=

cleanup() {
	local rc=$?
	if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
		kill "$PID" 2>/dev/null || true
		wait "$PID" 2>/dev/null || true
	fi
	for m in "$RO/tmp" "$RO/var/lib/mintlify_exporter" "$RO"; do
		mountpoint -q "$m" 2>/dev/null && umount "$m"
	done
	"${PODMAN[@]}" image unmount --all >/dev/null 2>&1 || true
	rm -rf "$WORK"
	exit $rc
}
trap cleanup EXIT

# 1. The stand-in base.
mkdir -p "$WORK/base/rootfs/etc/ssl/certs" "$WORK/base/rootfs/tmp" "$WORK/base/rootfs/home/nonroot"
cp /etc/ssl/certs/ca-certificates.crt "$WORK/base/rootfs/etc/ssl/certs/"
cat >"$WORK/base/rootfs/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF
cat >"$WORK/base/rootfs/etc/group" <<'EOF'
root:x:0:
nobody:x:65534:
nonroot:x:65532:
EOF
chmod 1777 "$WORK/base/rootfs/tmp"
cat >"$WORK/base/Containerfile" <<'EOF'
FROM scratch
COPY rootfs/ /
COPY --chown=65532:65532 rootfs/home/nonroot/ /home/nonroot/
USER 65532:65532
WORKDIR /home/nonroot
EOF
log "building the stand-in base $BASE"
"${PODMAN[@]}" build --quiet --pull=never -t "$BASE" "$WORK/base" >/dev/null

# 2. The image, from the binary make builds.
log "building .build/linux-$ARCH/mintlify_exporter"
make --no-print-directory image-binary IMAGE_ARCH="$ARCH" >/dev/null
log "building $IMAGE"
"${PODMAN[@]}" build --quiet --pull=never --platform "linux/$ARCH" -t "$IMAGE" . >/dev/null

cfg=$("${PODMAN[@]}" image inspect --format '{{.Config.User}}|{{json .Config.Entrypoint}}|{{.Config.WorkingDir}}' "$IMAGE")
want='65532:65532|["/bin/mintlify_exporter"]|/var/lib/mintlify_exporter'
[ "$cfg" = "$want" ] || fail "image config is $cfg, want $want"

mnt=$("${PODMAN[@]}" image mount "$IMAGE")
mkdir -p "$ROOT"
cp -a "$mnt/." "$ROOT/"
"${PODMAN[@]}" image unmount "$IMAGE" >/dev/null

for f in bin/mintlify_exporter etc/passwd etc/ssl/certs/ca-certificates.crt; do
	[ -s "$ROOT/$f" ] || fail "image has no /$f"
done
[ "$(stat -c '%a' "$ROOT/tmp")" = 1777 ] || fail "/tmp in the image is not mode 1777"
[ "$(stat -c '%u:%g' "$ROOT/var/lib/mintlify_exporter")" = 65532:65532 ] ||
	fail "/var/lib/mintlify_exporter (the working directory, default state) is not owned by 65532"
[ -z "$(ls -A "$ROOT/var/lib/mintlify_exporter")" ] || fail "/var/lib/mintlify_exporter is not empty in the image"
[ ! -e "$ROOT/usr/share/zoneinfo" ] || fail "the stand-in base must have no zoneinfo (the binary embeds it)"

# The binary's version is stamped.
version_out=$(chroot --userspec=65532:65532 "$ROOT" /bin/mintlify_exporter --version 2>&1)
rev=$(git rev-parse HEAD)
grep -q "revision: $rev" <<<"$version_out" || fail "--version does not show revision $rev: $version_out"

# 3. Read-only root with a state volume and a /tmp volume.
find "$ROOT" -printf '%P %U:%G %m %s %T@ %l\n' | sort >"$WORK/before"
mkdir -p "$RO" "$STATE" "$TMPV"
chown 65532:65532 "$STATE"
chmod 1777 "$TMPV"
mount --bind "$ROOT" "$RO"
mount -o remount,bind,ro "$RO"
mount --bind "$STATE" "$RO/var/lib/mintlify_exporter"

PORT=
pick_port() {
	for _ in $(seq 20); do
		PORT=$((20000 + RANDOM % 20000))
		curl -s -o /dev/null "http://127.0.0.1:$PORT/" || return 0
	done
	fail "no free port found"
}

# start ARGS...: runs the image's binary as 65532:65532 in the read-only root.
start() {
	pick_port
	: >"$WORK/exporter.log"
	chroot --userspec=65532:65532 "$RO" /bin/mintlify_exporter \
		--web.listen-address="127.0.0.1:$PORT" "$@" >"$WORK/exporter.log" 2>&1 &
	PID=$!
	for _ in $(seq 100); do
		if ! kill -0 "$PID" 2>/dev/null; then
			cat "$WORK/exporter.log" >&2
			fail "the exporter exited at start ($*)"
		fi
		curl -fs -o /dev/null "http://127.0.0.1:$PORT/-/ready" && return 0
		sleep 0.2
	done
	cat "$WORK/exporter.log" >&2
	fail "the exporter was not ready within 20s"
}

stop() {
	kill -TERM "$PID"
	local rc=0
	wait "$PID" || rc=$?
	PID=
	[ $rc = 0 ] || {
		cat "$WORK/exporter.log" >&2
		fail "the exporter exited with $rc on SIGTERM"
	}
}

uid_of() { awk '/^Uid:/ {print $2 ":" $3 ":" $4 ":" $5}' "/proc/$1/status"; }

# 3a. Without a writable /tmp, the sandbox's temporary state cannot be made:
# the exporter must say so and exit (this is why the chart mounts /tmp).
if chroot --userspec=65532:65532 "$RO" /bin/mintlify_exporter --mintlify.sandbox --web.enable-agent-api \
	--web.listen-address=127.0.0.1:0 >"$WORK/exporter.log" 2>&1; then
	fail "the sandbox started on a read-only /tmp; expected a clear error"
fi
grep -q 'sandbox state directory' "$WORK/exporter.log" || {
	cat "$WORK/exporter.log" >&2
	fail "no 'sandbox state directory' error on a read-only /tmp"
}
mount --bind "$TMPV" "$RO/tmp"

# 3b. Sandbox with the gateway, its state file in the state volume, a time
# zone the base does not carry.
log "running the image's binary as 65532 on a read-only root (state in the volume)"
start --mintlify.sandbox --web.enable-agent-api --analytics.timezone=Europe/Berlin \
	--agent.state-file=/var/lib/mintlify_exporter/agent.db
[ "$(uid_of "$PID")" = 65532:65532:65532:65532 ] || fail "the exporter runs with uids $(uid_of "$PID"), want 65532"
job=$(curl -fsS -H 'Content-Type: application/json' -d '{"prompt":"Fix the quickstart #fake:pr:1s"}' \
	"http://127.0.0.1:$PORT/api/v2/agent/acme-docs/job") || fail "the gateway refused a job"
grep -q '"id"' <<<"$job" || fail "the gateway's answer has no job id: $job"
metrics=
for _ in $(seq 50); do
	metrics=$(curl -fsS "http://127.0.0.1:$PORT/metrics") || fail "/metrics failed"
	grep -q '^mintlify_site_unique_visitors{' <<<"$metrics" && break
	sleep 0.2
done
for m in mintlify_site_unique_visitors mintlify_page_unique_visitors mintlify_analytics_refresh_success \
	mintlify_agent_jobs_submitted_total mintlify_exporter_build_info; do
	grep -q "^$m{" <<<"$metrics" || fail "/metrics has no $m series"
done
grep -q '^mintlify_analytics_refresh_success{.*source="visitors".*} 1$' <<<"$metrics" || fail "no successful visitors refresh in /metrics"
grep -q "^mintlify_agent_jobs_submitted_total{.*project=\"acme-docs\".*} 1$" <<<"$metrics" ||
	fail "the submitted job is not counted: $(grep mintlify_agent_jobs_submitted_total <<<"$metrics")"
stop
# The job state, the exporter's own. The sandbox's analytics ledger lasts
# one run, like the simulated API's quota (a second run shows data at once):
# it is kept under /tmp and removed on exit, never in the volume.
[ -s "$STATE/agent.db" ] || fail "no agent.db in the state volume: $(ls -A "$STATE")"
[ "$(stat -c '%u:%g' "$STATE/agent.db")" = 65532:65532 ] || fail "agent.db in the state volume is not owned by 65532"
[ "$(find "$STATE" -mindepth 1 | wc -l)" = 1 ] || fail "unexpected files in the state volume: $(ls -A "$STATE")"
[ -z "$(ls -A "$TMPV")" ] || fail "the sandbox left files in /tmp: $(ls -A "$TMPV")"

# 3c. The sandbox without --agent.state-file keeps a temporary state under
# /tmp and removes it on exit.
log "running the sandbox with its temporary state in /tmp"
start --mintlify.sandbox --web.enable-agent-api
ls -d "$TMPV"/mintlify_exporter-sandbox-* >/dev/null 2>&1 || fail "the sandbox's temporary state is not in /tmp"
metrics=$(curl -fsS "http://127.0.0.1:$PORT/metrics") || fail "/metrics failed"
grep -q '^mintlify_analytics_refresh_success{' <<<"$metrics" || fail "/metrics has no mintlify_ metrics"
stop
[ -z "$(ls -A "$TMPV")" ] || fail "the sandbox left files in /tmp: $(ls -A "$TMPV")"

# Nothing in the image's root changed.
umount "$RO/tmp" "$RO/var/lib/mintlify_exporter"
find "$ROOT" -printf '%P %U:%G %m %s %T@ %l\n' | sort >"$WORK/after"
diff -u "$WORK/before" "$WORK/after" >&2 || fail "the root filesystem changed"

log "ok: $(head -1 <<<"$version_out")"
