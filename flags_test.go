package main

// The tests of main itself run in this process: its flag parsing here, serve
// as main runs it in config_reload_prepare_test.go and soak_test.go. Tests
// that run the built binary are in internal/e2e (docs/development.md).

import (
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/server"
)

func TestParseFlagsDefaultsAndWindows(t *testing.T) {
	t.Parallel()
	c, err := parseFlags([]string{"--mintlify.project=a", "--mintlify.project=b", "--mintlify.project=a",
		"--analytics.window=7d", "--analytics.window=1d", "--analytics.window=7d", "--analytics.window=30d:6h", "--agent.retention=7d"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.analytics
	if got := strings.Join(cfg.ProjectIDs(), ","); got != "a,b" {
		t.Errorf("projects = %s, want a,b (deduplicated)", got)
	}
	var names []string
	for _, w := range cfg.Projects[0].Windows {
		names = append(names, w.Name)
	}
	if got := strings.Join(names, ","); got != "7d,1d,30d" || cfg.Projects[0].Windows[2].Interval != 6*time.Hour {
		t.Errorf("windows = %s, want 7d,1d,30d", got)
	}
	org := cfg.Organizations[0]
	if len(cfg.Organizations) != 1 || org.AnalyticsBudget != 60 || org.APIKeyEnv != "MINTLIFY_API_KEY" || cfg.Projects[0].Paths.MaxPaths != 1000 ||
		cfg.Projects[0].Loc() != time.UTC || len(cfg.Projects[1].Kinds) != len(config.KindSettings()) {
		t.Errorf("unexpected configuration: %+v", cfg)
	}
	if c.plan.PageSize != 250 || c.plan.MinInterval != 5*time.Minute || c.client.Config.Timeout != 30*time.Second || c.client.Config.MaxRetries != 2 ||
		c.plan.FinalDayDelay != 10*time.Minute || c.command != cmdServe || c.notice != "" {
		t.Errorf("unexpected defaults: %+v %+v", c.plan, c.client.Config)
	}
	// The flags' defaults are the packages' own.
	wantTracker, wantGateway := engine.Defaults(), gateway.Defaults()
	tc := c.engine.Config
	if tc.Retention != 7*24*time.Hour || tc.PollInterval != 10*time.Second || tc.ArchiveWatch != 24*time.Hour ||
		tc.MaxConcurrentPolls != wantTracker.MaxConcurrentPolls || tc.StatePath != wantTracker.StatePath || c.engine.StateFileSet {
		t.Errorf("unexpected engine defaults: %+v", tc)
	}
	if gc := c.gateway.Config; gc.MaxPromptBytes != 64<<10 || gc.CreateLimitPerHour != wantGateway.CreateLimitPerHour {
		t.Errorf("unexpected gateway defaults: %+v", gc)
	}
	off, err := parseFlags([]string{"--mintlify.project=a", "--agent.archive-watch=0s", "--agent.state-file=x.db"})
	if err != nil || off.engine.Config.ArchiveWatch != 0 || !off.engine.StateFileSet || off.engine.Config.StatePath != "x.db" {
		t.Errorf("--agent.archive-watch=0s --agent.state-file=x.db gave %+v, %v; want 0 (engine.Config's 'off') and the file", off.engine, err)
	}
	if (*c.server.Web.WebListenAddresses)[0] != server.DefaultPort {
		t.Errorf("listen address default = %v", *c.server.Web.WebListenAddresses)
	}
	// The old name of --analytics.min-interval still works, with a notice.
	old, err := parseFlags([]string{"--mintlify.project=a", "--visitors.cache-ttl=10m"})
	if err != nil || old.plan.MinInterval != 10*time.Minute || !strings.Contains(old.notice, "--analytics.min-interval") {
		t.Errorf("--visitors.cache-ttl=10m gave %s, %q, %v", old.plan.MinInterval, old.notice, err)
	}
}

// TestKindStartLimitFlags: a kind that declares a start limit
// (engine.Routes.StartLimit) gets its flag from the gateway: given, it
// reaches the gateway's configuration; left out, the kind's default holds.
func TestKindStartLimitFlags(t *testing.T) {
	t.Parallel()
	for _, k := range engine.Kinds() {
		d := k.Declare()
		l := d.Routes.StartLimit
		if l == nil {
			continue
		}
		c, err := parseFlags([]string{"--mintlify.project=p", "--" + l.Flag + "=7"})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.gateway.Config.StartLimits[d.Name]; got != 7 {
			t.Errorf("--%s=7: start limit of %s = %d", l.Flag, d.Name, got)
		}
		if c, err = parseFlags([]string{"--mintlify.project=p"}); err != nil {
			t.Fatal(err)
		}
		if got := c.gateway.Config.StartLimits[d.Name]; got != l.PerHour || l.PerHour <= 0 {
			t.Errorf("default start limit of %s = %d, want the declared %d", d.Name, got, l.PerHour)
		}
	}
}
