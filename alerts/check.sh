#!/bin/sh
# Checks the Prometheus rules shipped in alerts/ with promtool:
#   promtool check rules mintlify.rules.yml   (syntax, PromQL, templates)
#   promtool test rules tests/*.yml           (unit tests of every alert and recording rule)
# Exits non-zero on any failure, and when promtool is missing.
# promtool comes with Debian's prometheus package; set PROMTOOL to use another binary.
set -eu
cd "$(dirname "$0")"

PROMTOOL=${PROMTOOL:-promtool}
if ! command -v "$PROMTOOL" >/dev/null 2>&1; then
	echo "alerts/check.sh: $PROMTOOL not found. Install Debian's prometheus package:" >&2
	echo "  apt-get install -y --no-install-recommends prometheus" >&2
	echo "(or set PROMTOOL=/path/to/promtool)." >&2
	exit 1
fi

"$PROMTOOL" check rules mintlify.rules.yml
"$PROMTOOL" test rules tests/*.yml
