// Package kinds is the registry of the kinds of operation the exporter
// follows: the one place that names every kind. Each line links a kind's
// package, whose init registers it with the engine (engine.Register) and
// its key with the configuration; the engine, the gateway, the status
// page, the configuration and the wiring loop over the registry. Adding a
// kind: its package under internal/ops/kinds, its line here, its client
// and fake files, its docs page (docs/development.md, "Adding a kind").
package kinds

import (
	_ "github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/automation"
	_ "github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/deployment"
	_ "github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/job"
	_ "github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/staticexport"
)
