package exporter

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/human"
)

// levels of what a configuration walks, each within the one before it but
// organizations, which hold no project by name.
var levels = []string{"organizations", "projects", "sources", "windows"}

// changes is what a reload changed, as log key-value pairs: organizations,
// projects, sources (project/source) and windows (project/source/window)
// added or removed, each told at the highest level (a new project's sources
// are the project); every setting changed of one kept (a window's interval,
// a source's settings, a project's time zone, paths, organization and kinds,
// an organization's budget and key's place and expiry), as "where setting
// old -> new"; and the plan's requests per hour when it moved; "changed",
// "nothing" when nothing did. A reload that only says that it happened, or
// says some of what it did (30d:6h to 30d:30h logged nothing, issue 46),
// leaves the reader to diff two files.
func changes(old, next *config.Config, plannedBefore, plannedAfter float64) []any {
	before, after := demandsOf(old), demandsOf(next)
	var kv []any
	for i, level := range levels {
		var parentBefore, parentAfter map[string]bool
		if i > 1 {
			parentBefore, parentAfter = before[levels[i-1]], after[levels[i-1]]
		}
		if added := minus(after[level], before[level], parentBefore); len(added) > 0 {
			kv = append(kv, level+"_added", strings.Join(added, ","))
		}
		if removed := minus(before[level], after[level], parentAfter); len(removed) > 0 {
			kv = append(kv, level+"_removed", strings.Join(removed, ","))
		}
	}
	if changed := changedSettings(settingsOf(old), settingsOf(next)); len(changed) > 0 {
		kv = append(kv, "settings_changed", strings.Join(changed, "; "))
	}
	if math.Abs(plannedAfter-plannedBefore) >= 0.05 {
		kv = append(kv, "planned_requests_per_hour", fmt.Sprintf("%.1f -> %.1f", plannedBefore, plannedAfter))
	}
	if len(kv) == 0 {
		return []any{"changed", "nothing"}
	}
	return kv
}

// demandsOf is cfg's organizations, projects, sources and windows, each
// level a set of names (project, project/source, project/source/window).
func demandsOf(cfg *config.Config) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, l := range levels {
		out[l] = map[string]bool{}
	}
	if cfg == nil {
		return out
	}
	for _, o := range cfg.Organizations {
		out["organizations"][o.Name] = true
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

// settingsOf is every setting cfg applies, by where (an organization, a
// project, project/source, project/source/window) and then "\x00" and the
// setting's name; each place also holds "" under its own name, so that a
// setting is compared only where the place is kept.
func settingsOf(cfg *config.Config) map[string]string {
	out := map[string]string{}
	set := func(where, name, value string) {
		out[where] = ""
		out[where+"\x00"+name] = value
	}
	if cfg == nil {
		return out
	}
	for _, o := range cfg.Organizations {
		where := "organization " + o.Name
		set(where, "analytics_budget", strconv.Itoa(o.AnalyticsBudget))
		set(where, "api_key", "file "+o.APIKeyFile+" env "+o.APIKeyEnv) // where it is read, never the key
		set(where, "api_key_expires", orNone(!o.APIKeyExpires.IsZero(), o.APIKeyExpires.Format("2006-01-02")))
	}
	for _, p := range cfg.Projects {
		set(p.ID, "organization", p.Organization)
		set(p.ID, "timezone", p.Loc().String())
		set(p.ID, "paths", p.Paths.Key())
		for _, k := range config.KindSettings() { // a kind's key: true, false or the ids it lists
			v, on := p.Takes(k.Key)
			if k.IDs != nil {
				set(p.ID, k.Key, "["+strings.Join(v, ",")+"]")
			} else {
				set(p.ID, k.Key, strconv.FormatBool(on))
			}
		}
		for _, sp := range p.Specs() {
			out[p.ID+"/"+sp.Name] = "" // kept: a setting given anew is a change
			for k, v := range sp.Settings {
				set(p.ID+"/"+sp.Name, k, strconv.Itoa(v))
			}
			for _, w := range sp.Windows {
				set(p.ID+"/"+sp.Name+"/"+w.Name, "interval", orNone(w.Interval > 0, human.Duration(w.Interval)))
			}
		}
	}
	return out
}

// changedSettings is "where setting old -> new" for every setting of a
// place kept that differs (one not given reads "none"), sorted.
func changedSettings(before, after map[string]string) []string {
	var out []string
	for _, m := range []map[string]string{before, after} {
		for key := range m {
			where, name, ok := strings.Cut(key, "\x00")
			_, keptBefore := before[where]
			_, keptAfter := after[where]
			was, was2 := before[key]
			is, is2 := after[key]
			if ok && keptBefore && keptAfter && (was != is || was2 != is2) {
				out = append(out, fmt.Sprintf("%s %s %s -> %s", where, name, orNone(was2, was), orNone(is2, is)))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// orNone is v, or "none" when not given.
func orNone(given bool, v string) string {
	if given {
		return v
	}
	return "none"
}
