#!/bin/sh
# Copies the rules and dashboards into the Helm chart, which cannot read files
# outside its directory. They are generated from the monitoring mixin (mixin/,
# `make mixin` runs this script after generating them): never edit alerts/
# mintlify.rules.yml, dashboards/*.json or charts/mintlify-exporter/files/ by
# hand; mixin/mixin_test.go and the chart's test (charts/mintlify-exporter/test)
# fail when the copies drift.
set -eu
cd "$(dirname "$0")/.."
dst=charts/mintlify-exporter/files
rm -rf "$dst/alerts" "$dst/dashboards"
mkdir -p "$dst/alerts" "$dst/dashboards"
cp alerts/mintlify.rules.yml "$dst/alerts/"
cp dashboards/*.json "$dst/dashboards/"
