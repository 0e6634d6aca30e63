package exporter

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
)

// levels of what a configuration walks, each within the one before it.
var levels = []string{"projects", "sources", "windows"}

// changes is what a reload changed of the analytics, as log key-value
// pairs: projects, sources (project/source) and windows
// (project/source/window) added or removed, each told at the highest level
// (a new project's sources are the project), and the plan's requests per
// hour when it moved; "changed", "nothing" when nothing did. A reload that
// only says that it happened leaves the reader to diff two files.
func changes(old, next *config.Config, plannedBefore, plannedAfter float64) []any {
	before, after := demandsOf(old), demandsOf(next)
	var kv []any
	for i, level := range levels {
		var parentBefore, parentAfter map[string]bool
		if i > 0 {
			parentBefore, parentAfter = before[levels[i-1]], after[levels[i-1]]
		}
		if added := minus(after[level], before[level], parentBefore); len(added) > 0 {
			kv = append(kv, level+"_added", strings.Join(added, ","))
		}
		if removed := minus(before[level], after[level], parentAfter); len(removed) > 0 {
			kv = append(kv, level+"_removed", strings.Join(removed, ","))
		}
	}
	if math.Abs(plannedAfter-plannedBefore) >= 0.05 {
		kv = append(kv, "planned_requests_per_hour", fmt.Sprintf("%.1f -> %.1f", plannedBefore, plannedAfter))
	}
	if len(kv) == 0 {
		return []any{"changed", "nothing"}
	}
	return kv
}

// demandsOf is cfg's projects, sources and windows, each level a set of
// names (project, project/source, project/source/window).
func demandsOf(cfg *config.Config) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, l := range levels {
		out[l] = map[string]bool{}
	}
	if cfg == nil {
		return out
	}
	for _, p := range cfg.Projects {
		out["projects"][p.ID] = true
		for _, sp := range p.Specs() {
			out["sources"][p.ID+"/"+sp.Name] = true
			for _, w := range sp.Windows {
				out["windows"][p.ID+"/"+sp.Name+"/"+w.Name] = true
			}
		}
	}
	return out
}

// minus is the names of a that b lacks, sorted, but those whose parent
// (the project of a source, the source of a window) is not in parents
// either: that parent is told instead. parents nil: top level.
func minus(a, b, parents map[string]bool) []string {
	var out []string
	for name := range a {
		if b[name] {
			continue
		}
		if i := strings.LastIndex(name, "/"); parents != nil && i >= 0 && !parents[name[:i]] {
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
