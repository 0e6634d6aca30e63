// Package e2e holds the black-box tests: the built exporter binary, run as
// a user runs it, against the fake Mintlify API, Redis and the repository's
// files, with one harness (blackbox_helpers_test.go: the binary built once
// per change of the sources, started on a free port; and
// internal/testutil/blackbox, shared with the root package's tests of main:
// scraped, reloaded).
//
// The untagged tests run with `go test ./...` (`make test`): the binary's
// flags, commands and errors, configuration files and reloads, kill -9 and
// state files, replicas on Redis, the sandbox, the documentation against
// the binary, and the examples/ files themselves. The tests tagged e2e
// (`make e2e`) add Debian's Prometheus, with the repository's rules, and
// Alertmanager, both configured from examples/, and three replicas on one
// Redis scraped by one Prometheus, which must answer every dashboard and
// rule query as a single exporter does.
package e2e
