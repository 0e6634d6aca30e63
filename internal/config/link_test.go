package config_test

import (
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	// The sources declare themselves to the configuration when their
	// package initialises: the tests of this package read the real
	// declarations.
	_ "github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// TestDefaultBudget: the configuration, a leaf, spells the budget's
// default itself; they must agree.
func TestDefaultBudget(t *testing.T) {
	if config.DefaultBudget != budget.DefaultLimit {
		t.Errorf("config.DefaultBudget %d, budget.DefaultLimit %d", config.DefaultBudget, budget.DefaultLimit)
	}
}
