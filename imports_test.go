package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestImportsRunOneWay holds the package layout docs/development.md
// describes: what the collector, the sources, the scheduler and the job
// path may not depend on, directly or not.
func TestImportsRunOneWay(t *testing.T) {
	t.Parallel()
	const mod = "github.com/mintlify-exporter/mintlify_exporter/"
	const anything = "*" // no package of this module
	forbidden := map[string][]string{
		"collector":            {"internal/refresh", "internal/ops/engine", "internal/ops/gateway", "internal/orgs"},
		"internal/sources":     {"internal/refresh", "collector", "internal/ops/engine", "internal/ops/gateway"},
		"internal/refresh":     {"collector", "internal/ops/engine", "internal/ops/gateway"},
		"internal/ops/gateway": {"internal/sources", "internal/refresh", "collector"},
		"internal/ops/engine":  {"internal/sources", "internal/refresh", "collector", "internal/ops/gateway", "internal/status", "internal/ops/kinds"},
		"internal/ops/store":   {"internal/ops/engine"},
		"internal/bounded":     {anything},
		"internal/secrets":     {anything},
		// The plain types the configuration and the analytics share.
		"internal/analytics": {anything},
	}
	// The configuration is a leaf: it holds plain settings and their
	// rules, and the packages that run (cluster, refresh, sources, budget,
	// orgs, ...) read its validated value. Only these leaves of types and
	// helpers may be under it, so a new import of anything that runs fails.
	onlyLeaves := map[string][]string{
		"internal/config": {"internal/analytics", "internal/secrets"},
	}
	for pkg, banned := range forbidden {
		for _, name := range ourDeps(t, mod, pkg) {
			if slices.Contains(banned, name) || slices.Contains(banned, anything) {
				t.Errorf("%s depends on %s", pkg, name)
			}
		}
	}
	for pkg, allowed := range onlyLeaves {
		for _, name := range ourDeps(t, mod, pkg) {
			if !slices.Contains(allowed, name) {
				t.Errorf("%s depends on %s, which is not one of the leaves %v", pkg, name, allowed)
			}
		}
		for _, leaf := range allowed {
			if deps := ourDeps(t, mod, leaf); len(deps) > 0 {
				t.Errorf("%s, a leaf under %s, depends on %v", leaf, pkg, deps)
			}
		}
	}
}

// ourDeps lists the packages of this module that pkg depends on, directly
// or not (pkg itself left out).
func ourDeps(t *testing.T, mod, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	var deps []string
	for _, dep := range strings.Fields(string(out)) {
		if name, ours := strings.CutPrefix(dep, mod); ours && name != pkg {
			deps = append(deps, name)
		}
	}
	return deps
}
