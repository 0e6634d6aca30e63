#!/usr/bin/env bash
# Checks the Helm chart charts/mintlify-exporter:
#  - helm lint --strict, with the default values, with ci/gateway-values.yaml
#    (gateway, state volume, web config, ServiceMonitor, PrometheusRule, dashboards),
#    with ci/config-values.yaml (the configuration file route), with
#    ci/ha-values.yaml (two replicas sharing a Redis) and with
#    ci/ha-gateway-values.yaml (the same with the job gateway);
#  - helm template with each;
#  - replicas: replicaCount=2 without cluster.redis.address does not render and
#    says why, nor does the gateway on replicas with web TLS (they forward to
#    each other over plain HTTP); ci/ha-values.yaml renders 2 replicas without
#    strategy Recreate, with a PodDisruptionBudget, the Redis address and the
#    password file; ci/ha-gateway-values.yaml as much, with
#    --web.enable-agent-api and no PersistentVolumeClaim (the jobs are in
#    Redis); the one-replica renderings keep replicas 1 (the gateway's strategy
#    Recreate) and have no PodDisruptionBudget;
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
ha_gateway_values=$chart/ci/ha-gateway-values.yaml

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
"$helm" lint --strict "$chart" -f "$ha_gateway_values"
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
# The gateway on replicas: one runs it on the jobs in Redis, the others
# forward /api/ to it at its pod IP (the exporter's default advertise URL,
# plain HTTP): no claim, no advertise flag, and refused with web TLS.
"$helm" template rel "$chart" -f "$ha_gateway_values" >"$work/ha-gw.yaml"
grep -qx '  replicas: 2' "$work/ha-gw.yaml" || fail "$ha_gateway_values: not replicas: 2"
grep -qx '    type: RollingUpdate' "$work/ha-gw.yaml" || fail "$ha_gateway_values: no strategy RollingUpdate"
grep -qx 'kind: PodDisruptionBudget' "$work/ha-gw.yaml" || fail "$ha_gateway_values: no PodDisruptionBudget"
grep -qx -- '            - --web.enable-agent-api' "$work/ha-gw.yaml" || fail "$ha_gateway_values: no --web.enable-agent-api"
grep -qF -- '- "--cluster.redis-address=valkey.cache.svc.cluster.local:6379"' "$work/ha-gw.yaml" || fail "$ha_gateway_values: no Redis address flag"
! grep -Eq 'PersistentVolumeClaim|persistentVolumeClaim' "$work/ha-gw.yaml" || fail "$ha_gateway_values: a claim for the gateway on replicas"
! grep -q -- '--cluster.advertise-url' "$work/ha-gw.yaml" || fail "$ha_gateway_values: an advertise URL: the exporter's default (the pod IP) is the one to use"
if "$helm" template rel "$chart" -f "$values" --set replicaCount=2 --set cluster.redis.address=redis:6379 >/dev/null 2>"$work/err"; then
	fail "$values: the gateway on replicas renders with webConfig.tls"
fi
grep -qF "replicaCount=2 with gateway.enabled and webConfig.tls" "$work/err" || fail "the gateway on replicas with web TLS fails without saying why: $(cat "$work/err")"
for v in "$chart/ci/sandbox-values.yaml" "$values" "$config_values"; do
	"$helm" template rel "$chart" -f "$v" >"$work/one.yaml"
	grep -qx '  replicas: 1' "$work/one.yaml" || fail "$v: not replicas: 1"
	! grep -q 'kind: PodDisruptionBudget' "$work/one.yaml" || fail "$v: a PodDisruptionBudget on one replica"
	! grep -q -- '--cluster\.' "$work/one.yaml" || fail "$v: cluster settings that were not asked for"
done
# Into a file: grep -q stops reading at the first match, and helm, killed
# by SIGPIPE, would fail the pipeline under pipefail.
"$helm" template rel "$chart" -f "$values" >"$work/gw.yaml"
grep -qx '    type: Recreate' "$work/gw.yaml" || fail "$values: the gateway lost strategy Recreate"

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
