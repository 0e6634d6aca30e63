#!/usr/bin/env bash
# Checks the Helm chart charts/mintlify-exporter:
#  - helm lint --strict, with the default values, with ci/gateway-values.yaml
#    (gateway, state volume, web config, ServiceMonitor, PrometheusRule, dashboards),
#    with ci/config-values.yaml (the configuration file route) and with
#    ci/ha-values.yaml (two replicas sharing a Redis);
#  - helm template with each;
#  - replicas: replicaCount=2 without cluster.redis.address does not render and
#    says why; ci/ha-values.yaml renders 2 replicas without strategy Recreate,
#    with a PodDisruptionBudget, the Redis address and the password file; the
#    one-replica renderings keep replicas 1 (the gateway's strategy Recreate)
#    and have no PodDisruptionBudget;
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
ha_values=$chart/ci/ha-values.yaml

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
"$helm" lint --strict "$chart" -f "$ha_values"
"$helm" template rel "$chart" -f "$chart/ci/sandbox-values.yaml" >/dev/null
"$helm" template rel "$chart" -f "$values" >/dev/null
"$helm" template rel "$chart" -f "$config_values" >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Replicas. Without a shared Redis, several replicas would each spend the
# organization's budget: the chart refuses them and says why. (The chart
# test checks the same renderings object by object.)
if "$helm" template rel "$chart" -f "$chart/ci/sandbox-values.yaml" --set replicaCount=2 >/dev/null 2>"$work/err" ||
	"$helm" template rel "$chart" --set replicaCount=2 --set 'mintlify.projects={docs}' --set mintlify.apiKey.existingSecret=k >/dev/null 2>>"$work/err"; then
	fail "replicaCount=2 renders without cluster.redis.address"
fi
for want in "replicaCount=2 needs cluster.redis.address" "the organization's 100 requests per hour several times over"; do
	[ "$(grep -cF "$want" "$work/err")" = 2 ] || fail "replicaCount=2 without the cluster fails without saying \"$want\": $(cat "$work/err")"
done
"$helm" template rel "$chart" -f "$ha_values" >"$work/ha.yaml"
grep -qx '  replicas: 2' "$work/ha.yaml" || fail "$ha_values: not replicas: 2"
! grep -q 'type: Recreate' "$work/ha.yaml" || fail "$ha_values: strategy Recreate on several replicas"
grep -qx 'kind: PodDisruptionBudget' "$work/ha.yaml" || fail "$ha_values: no PodDisruptionBudget"
grep -qF -- '- "--cluster.redis-address=valkey.cache.svc.cluster.local:6380"' "$work/ha.yaml" || fail "$ha_values: no Redis address flag"
grep -qF -- '- "--cluster.redis-password-file=/etc/mintlify_exporter/redis/password"' "$work/ha.yaml" || fail "$ha_values: no Redis password file flag"
grep -qx '            secretName: mintlify-redis' "$work/ha.yaml" || fail "$ha_values: the password Secret is not mounted"
for v in "$chart/ci/sandbox-values.yaml" "$values" "$config_values"; do
	"$helm" template rel "$chart" -f "$v" >"$work/one.yaml"
	grep -qx '  replicas: 1' "$work/one.yaml" || fail "$v: not replicas: 1"
	! grep -q 'kind: PodDisruptionBudget' "$work/one.yaml" || fail "$v: a PodDisruptionBudget on one replica"
	! grep -q -- '--cluster\.' "$work/one.yaml" || fail "$v: cluster settings that were not asked for"
done
"$helm" template rel "$chart" -f "$values" | grep -qx '    type: Recreate' || fail "$values: the gateway lost strategy Recreate"

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
