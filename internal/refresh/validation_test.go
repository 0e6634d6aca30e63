package refresh

import (
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// TestNewValidation: New refuses plan settings no plan could run, and an
// unknown source. The projects' rules (ids, windows, intervals, path caps,
// sources) are the configuration's, checked once there for the file and
// the flags: config.TestParseProblemsNameFileLineAndKey, TestSourcesKey,
// TestFlagRouteReportsEveryProblemByFlag, TestEveryProblemOfAFileAtOnce and
// analytics.TestParseWindow hold them (they were repeated here).
func TestNewValidation(t *testing.T) {
	client, err := apiclient.New(apiclient.Config{BaseURL: "http://127.0.0.1:1", APIKey: simKey})
	if err != nil {
		t.Fatal(err)
	}
	b, err := budget.New(budget.Config{Limit: 60})
	if err != nil {
		t.Fatal(err)
	}
	ok := planConfig{Projects: []string{"a"}, Windows: []analytics.Window{day1}, Config: Config{PageSize: 250, MinInterval: time.Minute, FinalDayDelay: -1}}
	bad := map[string]func(c *planConfig){
		"page size 0":                 func(c *planConfig) { c.PageSize = 0 },
		"page size 251":               func(c *planConfig) { c.PageSize = 251 },
		"zero min interval":           func(c *planConfig) { c.MinInterval = 0 },
		"negative min interval":       func(c *planConfig) { c.MinInterval = -time.Second },
		"negative staleness":          func(c *planConfig) { c.MaxStaleness = -time.Second },
		"negative max pages":          func(c *planConfig) { c.MaxPages = -1 },
		"negative timeout":            func(c *planConfig) { c.RefreshTimeout = -1 },
		"negative retry interval":     func(c *planConfig) { c.RetryInterval = -1 },
		"negative concurrency":        func(c *planConfig) { c.Concurrency = -1 },
		"final day after its export":  func(c *planConfig) { c.FinalDayDelay = FinalDayExport },
		"final day long after export": func(c *planConfig) { c.FinalDayDelay = 2 * time.Hour },
		"unknown source":              func(c *planConfig) { c.Sources = []sources.Spec{{Name: "nope"}} },
	}
	for name, mutate := range bad {
		cfg := ok
		mutate(&cfg)
		if s, err := New(client, b, cfg.build(), nil); err == nil {
			s.Close()
			t.Errorf("%s: New accepted it", name)
		}
	}
	if _, err := New(nil, b, ok.build(), nil); err == nil {
		t.Error("nil client accepted")
	}
	if _, err := New(client, nil, ok.build(), nil); err == nil {
		t.Error("nil budget accepted")
	}

	// 2 projects × 2 windows, plus yesterday's final day per project
	// during the first hour of the day.
	for _, tc := range []struct {
		finalDay time.Duration
		now      time.Time
		views    int
	}{
		{-1, fixedNow, 4},
		{0, fixedNow, 4}, // 15:00: yesterday is no longer exported
		{0, time.Date(2026, 3, 10, 0, 30, 0, 0, time.UTC), 6},
	} {
		cfg := ok
		cfg.Projects = []string{"a", "b"}
		cfg.Windows = []analytics.Window{day1, days7}
		cfg.FinalDayDelay = tc.finalDay
		cfg.Now = func() time.Time { return tc.now }
		s, err := New(client, b, cfg.build(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, v := range s.Views() {
			got = append(got, v.Project+"/"+v.Window)
		}
		s.Close()
		if len(got) != tc.views {
			t.Errorf("final-day delay %s at %s: views %q, want %d (duplicates merged)", tc.finalDay, tc.now.Format(time.Kitchen), got, tc.views)
		}
	}
}
