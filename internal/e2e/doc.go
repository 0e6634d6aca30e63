// Package e2e holds the black-box tests: the built exporter binary, run as
// a user runs it, against the fake Mintlify API, Redis and the repository's
// files, with one harness (blackbox_helpers_test.go: the binary built once
// per change of the sources, started on a free port; and
// internal/testutil/blackbox, shared with the root package's tests of main:
// scraped, reloaded).
//
// The untagged tests run with `go test ./...` (`make test`): the binary's
// flags, commands and errors, configuration files and reloads, kill -9 and
// state files, the sandbox, the documentation against the binary, and the
// examples/ files themselves. The tests tagged e2e (`make e2e`) run whole
// deployments: Debian's Prometheus, with the repository's rules, and
// Alertmanager, both configured from examples/; several replicas on one
// Redis (replicas_*_test.go: real leases and intervals, tens of seconds
// each), also scraped by one Prometheus, which must answer every dashboard
// and rule query as a single exporter does; and Redis Sentinel.
package e2e
