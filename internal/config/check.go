package config

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
)

// Describe writes what cfg exports and, per organization, the budget
// arithmetic: the plan's intervals if every walk took one request (a site
// of up to 250 paths; larger sites take a request per 250 paths, learned
// at the first walk). minInterval is --visitors.min-interval.
func Describe(w io.Writer, cfg *Config, minInterval time.Duration) {
	src := cmp.Or(cfg.File, "flags")
	fmt.Fprintf(w, "configuration from %s: %d organization(s), %d project(s)\n", src, len(cfg.Organizations), len(cfg.Projects))
	for _, o := range cfg.Organizations {
		key := "file " + o.APIKeyFile
		if o.APIKeyFile == "" {
			key = "environment variable " + o.APIKeyEnv
		}
		fmt.Fprintf(w, "\norganization %s: key from %s, analytics budget %d requests per rolling hour (%.0f plannable)\n",
			o.Name, key, o.AnalyticsBudget, refresh.Plannable(o.AnalyticsBudget))
		var demands []refresh.Demand
		var names []string
		for _, p := range cfg.Projects {
			if p.Organization != o.Name {
				continue
			}
			var ws []string
			for _, win := range p.Windows {
				ws = append(ws, windowSpec(win.Name, win.Interval))
				demands = append(demands, refresh.Demand{Cost: 1, MinInterval: cmp.Or(win.Interval, minInterval), Days: win.Days, Midnight: win.Days == 1})
				names = append(names, p.ID+"/"+win.Name)
			}
			fmt.Fprintf(w, "  project %s: windows %s, timezone %s, paths %s, agent jobs %s\n",
				p.ID, strings.Join(ws, " "), p.Loc(), pathsSpec(p), onOff(p.AgentJobs))
		}
		if len(demands) == 0 {
			fmt.Fprintf(w, "  no project\n")
			continue
		}
		intervals := refresh.Intervals(refresh.Plannable(o.AnalyticsBudget), time.Hour, demands)
		spend := refresh.Spend(time.Hour, demands, intervals)
		fmt.Fprintf(w, "  plan at 1 request per walk: %.1f requests per hour\n", spend)
		for i, n := range names {
			fmt.Fprintf(w, "    %s every %s\n", n, model.Duration(intervals[i]))
		}
	}
}

func windowSpec(name string, interval time.Duration) string {
	if interval == 0 {
		return name
	}
	return name + ":" + model.Duration(interval).String()
}

func pathsSpec(p Project) string {
	var parts []string
	if p.Paths.Include != nil {
		parts = append(parts, "include "+p.Paths.Include.String())
	}
	if p.Paths.Exclude != nil {
		parts = append(parts, "exclude "+p.Paths.Exclude.String())
	}
	if p.Paths.MaxPaths > 0 {
		parts = append(parts, fmt.Sprintf("at most %d", p.Paths.MaxPaths))
	} else {
		parts = append(parts, "no cap")
	}
	return strings.Join(parts, ", ")
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
