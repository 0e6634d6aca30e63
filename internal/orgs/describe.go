package orgs

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/human"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
)

// Describe writes what cfg exports and, per organization, the plan its
// budget pays for before any walk has told what walks cost: a site of up
// to 250 paths takes one request per walk of visitors or views, larger
// ones a request per 250 paths, learned at the first walk. plan holds the
// process-wide plan settings (--analytics.min-interval, ...).
func Describe(w io.Writer, cfg *config.Config, plan refresh.Config) error {
	src := cmp.Or(cfg.File, "flags")
	fmt.Fprintf(w, "configuration from %s: %d organization(s), %d project(s)\n", src, len(cfg.Organizations), len(cfg.Projects))
	for _, o := range cfg.Organizations {
		key := "file " + o.APIKeyFile
		if o.APIKeyFile == "" {
			key = "environment variable " + o.APIKeyEnv
		}
		fmt.Fprintf(w, "\norganization %s: key from %s, analytics budget %d requests per rolling hour (%.0f plannable)\n",
			o.Name, key, o.AnalyticsBudget, refresh.Plannable(o.AnalyticsBudget))
		if !o.APIKeyExpires.IsZero() {
			fmt.Fprintf(w, "  key expires %s\n", o.APIKeyExpires.UTC().Format(time.RFC3339))
		}
		projects := cfg.ProjectsOf(o.Name)
		for _, p := range cfg.Projects {
			if p.Organization != o.Name {
				continue
			}
			var ws, ss []string
			for _, win := range p.Windows {
				ws = append(ws, windowSpec(win.Name, win.Interval))
			}
			for _, sp := range p.Sources {
				ss = append(ss, sp.Name)
			}
			fmt.Fprintf(w, "  project %s: windows %s, timezone %s, paths %s, sources %s, %s\n",
				p.ID, strings.Join(ws, " "), p.Loc(), pathsSpec(p), strings.Join(ss, " "), kindsSpec(p))
		}
		if len(projects) == 0 {
			fmt.Fprintf(w, "  no project\n")
			continue
		}
		rc := plan
		rc.Projects = projects
		views, planned, notice, err := refresh.Preview(rc, o.AnalyticsBudget)
		if err != nil {
			return fmt.Errorf("organization %s: %w", o.Name, err)
		}
		fmt.Fprintf(w, "  plan before the first walks: %.1f requests per hour\n", planned)
		for _, v := range views {
			if v.Interval == 0 {
				continue
			}
			fmt.Fprintf(w, "    %s/%s/%s %s every %s, %d request(s) per walk\n", v.Project, v.Source, v.Window, v.Scope,
				human.Duration(v.Interval), v.Cost)
		}
		if notice != "" {
			fmt.Fprintf(w, "  notice: %s\n", notice)
		}
	}
	return nil
}

func windowSpec(name string, interval time.Duration) string {
	if interval == 0 {
		return name
	}
	return name + ":" + model.Duration(interval).String()
}

func pathsSpec(p config.Project) string {
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

// kindsSpec is every kind of operation's state for p: "agent jobs on,
// deployments off, ..., automations wf_a wf_b" (a kind with a list names
// what it lists).
func kindsSpec(p config.Project) string {
	var parts []string
	for _, s := range config.KindSettings() {
		v, ok := p.Takes(s.Kind)
		switch {
		case !ok:
			parts = append(parts, s.Noun+" off")
		case len(v) > 0:
			parts = append(parts, s.Noun+" "+strings.Join(v, " "))
		default:
			parts = append(parts, s.Noun+" on")
		}
	}
	return strings.Join(parts, ", ")
}
