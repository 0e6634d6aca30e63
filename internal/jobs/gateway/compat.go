// Package gateway is the old import path of internal/ops/gateway, kept
// only for the tests that still name it (soak_test.go) until they are
// moved: the engine of operations of every kind lives in internal/ops
// (issue 36). New code imports internal/ops/gateway.
//
// Deprecated: use internal/ops/gateway.
package gateway

import "github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"

// Types the old path's users name.
type (
	JobList           = gateway.JobList
	UnknownCreateList = gateway.UnknownCreateList
)
