#!/usr/bin/env bash
# Checks the release configuration (.goreleaser.yaml) the way a release uses it:
#
#  1. `goreleaser check`;
#  2. a snapshot release into dist/ (builds and archives, nothing published):
#     all six platforms by default, or only linux/amd64 with
#     RELEASE_CHECK_TARGETS=single (about a sixth of the time);
#  3. the checksums verify, and each archive holds the binary, LICENSE,
#     README.md, docs/, CHANGELOG.md, the dashboards, the rules and the runbook,
#     identical to the checkout;
#  4. the linux/amd64 binary is static, built with -trimpath, and its
#     --version names the snapshot version and this commit.
#
# goreleaser is installed into $(go env GOPATH)/bin from the Go module proxy
# when missing or at another version. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

# v2.14.3 is the newest goreleaser that builds with Go 1.26 from this proxy
# (v2.15+ needs go.digitalxero.dev/go-msix, v2.18+ Go 1.27).
GORELEASER_VERSION=v2.14.3
TARGETS=${RELEASE_CHECK_TARGETS:-all}

name=release-check
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

goreleaser=$(go_tool github.com/goreleaser/goreleaser/v2 github.com/goreleaser/goreleaser/v2 "$GORELEASER_VERSION" goreleaser)

if ! command -v unzip >/dev/null; then
	log "installing unzip"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends unzip >/dev/null
fi

# goreleaser reads the commit only where a remote is configured (in snapshot
# mode it otherwise stamps "none" and carries on). A clone without a remote
# gets one for goreleaser's git calls only, through the environment; the
# repository's config is not touched.
if [ -z "$(git remote)" ]; then
	export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url \
		GIT_CONFIG_VALUE_0=https://github.com/mintlify-exporter/mintlify_exporter.git
fi

"$goreleaser" check

config=.goreleaser.yaml
tmpconfig=
case $TARGETS in
all) ;;
single)
	# `release` has no --single-target: the same config, with linux/amd64 only.
	tmpconfig=$(mktemp --suffix=.yaml)
	sed -e 's/^    goos: \[linux, darwin, windows\]$/    goos: [linux]/' \
		-e 's/^    goarch: \[amd64, arm64\]$/    goarch: [amd64]/' "$config" >"$tmpconfig"
	grep -q '^    goos: \[linux\]$' "$tmpconfig" && grep -q '^    goarch: \[amd64\]$' "$tmpconfig" ||
		fail "cannot narrow $config to linux/amd64 (its goos/goarch lines changed)"
	config=$tmpconfig
	;;
*) fail "RELEASE_CHECK_TARGETS must be all or single, got $TARGETS" ;;
esac
start=$(date +%s)
"$goreleaser" release --snapshot --clean --config "$config"
[ -z "$tmpconfig" ] || rm -f "$tmpconfig"
log "snapshot release ($TARGETS) took $(($(date +%s) - start))s"

version=$(grep -o '"version":"[^"]*"' dist/metadata.json | head -1 | cut -d'"' -f4)
[ -n "$version" ] || fail "no version in dist/metadata.json"
rev=$(git rev-parse HEAD)

platforms=(linux-amd64)
[ "$TARGETS" = all ] && platforms=(linux-amd64 linux-arm64 darwin-amd64 darwin-arm64 windows-amd64 windows-arm64)

(cd dist && sha256sum --check --strict sha256sums.txt >/dev/null) || fail "dist/sha256sums.txt does not verify"

# The files every archive must carry, from the checkout.
want=(LICENSE README.md CHANGELOG.md alerts/RUNBOOK.md)
for f in dashboards/*.json alerts/*.yml docs/*.md docs/*.png; do want+=("$f"); done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for p in "${platforms[@]}"; do
	name=mintlify_exporter-$version.$p
	bin=mintlify_exporter
	if [[ $p == windows-* ]]; then
		archive=dist/$name.zip
		bin=mintlify_exporter.exe
	else
		archive=dist/$name.tar.gz
	fi
	[ -s "$archive" ] || fail "no $archive"
	grep -q "  $(basename "$archive")\$" dist/sha256sums.txt || fail "$archive is not in sha256sums.txt"
	mkdir -p "$work/$p"
	if [[ $archive == *.zip ]]; then
		unzip -q "$archive" -d "$work/$p"
	else
		tar -xzf "$archive" -C "$work/$p"
	fi
	dir=$work/$p/$name
	[ -s "$dir/$bin" ] || fail "$archive has no $name/$bin"
	for f in "${want[@]}"; do
		cmp -s "$f" "$dir/$f" || fail "$archive: $name/$f is missing or differs from the checkout"
	done
	extra=$(cd "$dir" && find . -type f ! -name "$bin" | sed 's|^\./||' | sort)
	expected=$(printf '%s\n' "${want[@]}" | sort)
	[ "$extra" = "$expected" ] || fail "$archive holds other files than expected: $(diff <(echo "$expected") <(echo "$extra") | tr '\n' ' ')"
done

exe=$work/linux-amd64/mintlify_exporter-$version.linux-amd64/mintlify_exporter
buildinfo=$(go version -m "$exe")
grep -Eq '^[[:space:]]+build[[:space:]]+CGO_ENABLED=0$' <<<"$buildinfo" || fail "the binary was not built with CGO_ENABLED=0"
grep -Eq '^[[:space:]]+build[[:space:]]+-trimpath=true$' <<<"$buildinfo" || fail "the binary was not built with -trimpath"
out=$("$exe" --version 2>&1) || fail "--version failed: $out"
grep -Fq "mintlify_exporter, version $version (branch: " <<<"$out" || fail "--version does not show version $version: $out"
grep -Fq "revision: $rev)" <<<"$out" || fail "--version does not show revision $rev: $out"
grep -Eq 'build user:[[:space:]]+goreleaser$' <<<"$out" || fail "--version has no build user: $out"
grep -Eq 'build date:[[:space:]]+[0-9]{8}-[0-9]{2}:[0-9]{2}:[0-9]{2}$' <<<"$out" || fail "--version has no build date: $out"
log "ok: ${#platforms[@]} archive(s) of $version; $(head -1 <<<"$out")"
