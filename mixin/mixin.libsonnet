// mintlify_exporter monitoring mixin: Prometheus recording and alerting rules and Grafana dashboards,
// configured by _config (config.libsonnet). See docs/dashboards-alerts.md, "Customising alerts and dashboards".
//
//   prometheusAlerts   one rule group: the recording rules, then the alerts (the alerts use the
//                      recording rules' results of the same evaluation, so they share a group;
//                      there is no separate prometheusRules)
//   grafanaDashboards  'visitors.json', 'agent-jobs.json', 'exporter-health.json', 'feedback-search.json',
//                      'assistant.json', 'deployments.json'
//   rulesFileHeader    the comment written at the top of the generated rule file
//
// make mixin (go run ./mixin/gen) writes the defaults to alerts/mintlify.rules.yml and
// dashboards/*.json; go run ./mixin/gen -mixin your.jsonnet -out DIR writes your configuration.
(import 'config.libsonnet') +
(import 'alerts.libsonnet') +
(import 'dashboards.libsonnet') +
(import 'header.libsonnet')
