#!/usr/bin/env bash
# Checks the Helm chart charts/mintlify-exporter:
#  - helm lint --strict, with the default values, with ci/gateway-values.yaml
#    (gateway, state volume, web config, ServiceMonitor, PrometheusRule, dashboards)
#    and with ci/config-values.yaml (the configuration file route);
#  - helm template with both;
#  - helm package: the package holds the rules and dashboards, not the test module;
#  - the chart's Go test module (charts/mintlify-exporter/test): every rendered
#    object decoded strictly into its Kubernetes or prometheus-operator type and
#    checked, the chart's copies of alerts/ and dashboards/ compared to them.
# helm is installed into $(go env GOPATH)/bin from the Go module proxy when
# missing or at another version. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

HELM_VERSION=v3.22.0
chart=charts/mintlify-exporter
values=$chart/ci/gateway-values.yaml
config_values=$chart/ci/config-values.yaml

name=chart-check
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

helm=$(go_tool helm.sh/helm/v3 helm.sh/helm/v3/cmd/helm "$HELM_VERSION" helm)

# The defaults alone lack a project and a key and must not render.
if "$helm" template rel "$chart" >/dev/null 2>&1; then
	fail "the chart renders without a project and a key"
fi
"$helm" lint --strict "$chart" -f "$chart/ci/sandbox-values.yaml"
"$helm" lint --strict "$chart" -f "$values"
"$helm" lint --strict "$chart" -f "$config_values"
"$helm" template rel "$chart" -f "$chart/ci/sandbox-values.yaml" >/dev/null
"$helm" template rel "$chart" -f "$values" >/dev/null
"$helm" template rel "$chart" -f "$config_values" >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$helm" package "$chart" -d "$work" >/dev/null
pkg=$(ls "$work"/mintlify-exporter-*.tgz)
tar -tzf "$pkg" | sort >"$work/contents"
for f in mintlify-exporter/files/alerts/mintlify.rules.yml mintlify-exporter/templates/deployment.yaml; do
	grep -qx "$f" "$work/contents" || fail "$pkg lacks $f"
done
for d in "$chart"/files/dashboards/*.json; do
	grep -qx "mintlify-exporter/files/dashboards/$(basename "$d")" "$work/contents" || fail "$pkg lacks $(basename "$d")"
done
if grep -Eq '^mintlify-exporter/(test|ci)/' "$work/contents"; then
	fail "$pkg holds the test module or CI values (see .helmignore)"
fi

cd "$chart/test"
out=$(gofmt -l .)
[ -z "$out" ] || fail "gofmt would change: $out"
go vet ./...
HELM=$helm go test -count=1 ./...
log "ok"
