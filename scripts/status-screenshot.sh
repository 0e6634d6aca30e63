#!/usr/bin/env bash
# Takes a screenshot of a running exporter's status page with headless
# chromium (Debian: apt-get install chromium), e.g. the README's:
#
#   make run                       # in one terminal; then, in another:
#   scripts/status-screenshot.sh http://localhost:9871/ docs/status-page.png
#   scripts/status-screenshot.sh http://localhost:9871/ docs/status-page-phone.png 390x844
#
# SIZE is the window in CSS pixels, WIDTHxHEIGHT (default 1280x1200). Headless
# chromium captures the window, not the whole page: give a height that holds
# the page. CHROMIUM overrides the browser's path. The browser runs without its
# sandbox (it refuses to start as root otherwise): point it only at a page you
# trust, such as your own exporter. CHROMIUM_TIMEOUT (seconds, default 60) is
# how long the browser may take before it is killed.
set -euo pipefail
name=status-screenshot
. "$(dirname "$0")/lib.sh"

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 URL OUT.png [WIDTHxHEIGHT]" >&2
	exit 2
fi
url=$1 out=$2 size=${3:-1280x1200}
[[ $size =~ ^[1-9][0-9]*x[1-9][0-9]*$ ]] || fail "size $size: want WIDTHxHEIGHT, e.g. 1280x1200"
chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$chromium" ] || fail "chromium not found (Debian: apt-get install chromium)"
# Chromium photographs an error page as happily as the real one.
if command -v curl >/dev/null; then
	curl -fsS -o /dev/null --max-time 10 "$url" || fail "$url does not answer 200: is the exporter running?"
fi

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
rm -f "$out"
# Where setpriv (util-linux) is, the browser and its timeout die with this
# script, also when it is killed (a test that runs it and is killed leaves no
# browser behind).
guard=()
if command -v setpriv >/dev/null; then guard=(setpriv --pdeathsig KILL); fi
if ! "${guard[@]}" timeout "${CHROMIUM_TIMEOUT:-60}" "${guard[@]}" "$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
	--no-first-run --no-default-browser-check --hide-scrollbars --disable-background-networking \
	--disable-component-update --disable-sync --user-data-dir="$profile" \
	--window-size="${size/x/,}" --screenshot="$out" "$url" >"$profile/log" 2>&1; then
	cat "$profile/log" >&2
	fail "chromium failed"
fi
[ -s "$out" ] || fail "chromium wrote no screenshot"
log "wrote $out ($size)"
