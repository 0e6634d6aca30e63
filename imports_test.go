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
		"collector":              {"internal/refresh", "internal/tracker", "internal/gateway", "internal/orgs"},
		"internal/sources":       {"internal/refresh", "collector", "internal/tracker", "internal/gateway"},
		"internal/refresh":       {"collector", "internal/tracker", "internal/gateway"},
		"internal/gateway":       {"internal/sources", "internal/refresh", "collector"},
		"internal/tracker":       {"internal/sources", "internal/refresh", "collector", "internal/gateway"},
		"internal/tracker/store": {"internal/tracker"},
		"internal/boundedwrite":  {anything},
		// The types the configuration and the analytics share.
		"internal/visitors": {anything},
	}
	for pkg, banned := range forbidden {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			name, ours := strings.CutPrefix(dep, mod)
			if !ours || name == pkg {
				continue
			}
			if slices.Contains(banned, name) || slices.Contains(banned, anything) {
				t.Errorf("%s depends on %s", pkg, name)
			}
		}
	}
}
