// Package e2e holds the end-to-end test: the built exporter against the fake
// Mintlify API, scraped by Debian's Prometheus with the repository's rules and
// notifying Debian's Alertmanager, both configured from examples/, and three
// replicas on one Redis scraped by one Prometheus, which must answer every
// dashboard and rule query as a single exporter does. Run it with
// `make e2e` (it needs the build tag e2e). The untagged tests here check the
// examples/ files themselves and run with `go test ./...`.
package e2e
