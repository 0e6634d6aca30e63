#!/bin/sh
# Copies the rules and dashboards into the Helm chart, which cannot read files
# outside its directory. alerts/ and dashboards/ stay the one source: never edit
# charts/mintlify-exporter/files/ by hand; the chart's test
# (charts/mintlify-exporter/test) fails when the copies drift.
set -eu
cd "$(dirname "$0")/.."
dst=charts/mintlify-exporter/files
rm -rf "$dst/alerts" "$dst/dashboards"
mkdir -p "$dst/alerts" "$dst/dashboards"
cp alerts/mintlify.rules.yml "$dst/alerts/"
cp dashboards/*.json "$dst/dashboards/"
