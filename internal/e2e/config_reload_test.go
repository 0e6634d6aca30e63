package e2e

import (
	"context"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// seriesOf counts every series with a project label of project.
func seriesOf(m map[string]float64, project string) []string {
	var out []string
	for k := range m {
		if strings.Contains(k, "project="+project+",") || strings.Contains(k, "project="+project+"}") {
			out = append(out, k)
		}
	}
	return out
}

// TestReloadAddsAndRemovesProjects reloads the built exporter twice, by
// SIGHUP and by POST /-/reload, each time adding one project and removing
// another: each reload costs exactly the new project's first walk, the
// removed project's series disappear, the unchanged project keeps its
// values and its place in the schedule, and scrapes during the reloads
// answer 200.
func TestReloadAddsAndRemovesProjects(t *testing.T) {
	t.Parallel()
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{Paths: 20, APIKey: "mint_test"})
	f := blackbox.NewReloadFile(t)
	f.Write("docs:7d,30d", "api:7d")
	x := startExporter(t, nil, blackbox.ConfigArgs(api.URL, f.Path)...)
	blackbox.WaitMetrics(t, x.Base, 20*time.Second, map[string]float64{
		blackbox.Refreshed("docs", "7d"): 1, blackbox.Refreshed("docs", "30d"): 1, blackbox.Refreshed("api", "7d"): 1,
	})
	blackbox.Eventually(t, 10*time.Second, "no walk in flight", func() bool { return idle(blackbox.StatusReport(t, x.Base)) })
	before := blackbox.Scrape(t, x.Base)
	docs := blackbox.DataSeries(before, "docs")
	if len(docs) == 0 || len(seriesOf(before, "api")) == 0 {
		t.Fatalf("no data series for docs or api:\n%v", slices.Sorted(maps.Keys(before)))
	}
	planned := demands(blackbox.StatusReport(t, x.Base))
	if n := len(api.Analytics("")); n != 3 {
		t.Fatalf("%d analytics requests at start, want 3 (one walk per project and window)", n)
	}

	// Scrape all along: a scrape during a reload answers 200.
	ctx, stopScraping := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var scrapes, failed int
	wg.Go(func() {
		for ctx.Err() == nil {
			_, code, err := testutil.Get(ctx, x.Base+"/metrics")
			if ctx.Err() != nil {
				return
			}
			scrapes++
			if err != nil || code != http.StatusOK {
				failed++
			}
		}
	})

	steps := []struct {
		how      string
		projects []string
		added    string
		removed  string
	}{
		{"SIGHUP", []string{"docs:7d,30d", "blog:7d"}, "blog", "api"},
		{"POST", []string{"guides:7d", "docs:7d,30d"}, "guides", "blog"},
	}
	for i, step := range steps {
		f.Write(step.projects...)
		if step.how == "SIGHUP" {
			sighupReload(t, x)
		} else if code, body := blackbox.PostReload(t, x.Base); code != http.StatusOK || body["status"] != "reloaded" {
			t.Fatalf("POST /-/reload: HTTP %d %v", code, body)
		}
		blackbox.WaitMetrics(t, x.Base, 20*time.Second, map[string]float64{blackbox.Refreshed(step.added, "7d"): 1})
		settle(t, x.Base)
		m := blackbox.Scrape(t, x.Base)

		if got, want := len(api.Analytics("")), 4+i; got != want {
			t.Errorf("%s reload: %d analytics requests in all, want %d (one first walk of %s)", step.how, got, want, step.added)
		}
		if n := len(api.Analytics(step.added)); n != 1 {
			t.Errorf("%s reload: %d requests for %s, want 1", step.how, n, step.added)
		}
		if n := len(api.Analytics("docs")); n != 2 {
			t.Errorf("%s reload: %d requests for docs, want its 2 first walks only", step.how, n)
		}
		if gone := seriesOf(m, step.removed); len(gone) > 0 {
			t.Errorf("%s reload: %s was removed but still has series: %v", step.how, step.removed, gone)
		}
		for k, v := range docs {
			if got, ok := m[k]; !ok || got != v {
				t.Errorf("%s reload: %s = %v (present %v), want %v as before the reload", step.how, k, got, ok, v)
			}
		}
		now := demands(blackbox.StatusReport(t, x.Base))
		for _, w := range []string{"docs/7d", "docs/30d"} {
			if !now[w].LastRefreshAt.Equal(planned[w].LastRefreshAt) || !now[w].NextRefreshAt.Equal(planned[w].NextRefreshAt) {
				t.Errorf("%s reload: %s moved in the schedule: last %s next %s, was last %s next %s", step.how, w,
					now[w].LastRefreshAt, now[w].NextRefreshAt, planned[w].LastRefreshAt, planned[w].NextRefreshAt)
			}
		}
		if _, ok := now[step.removed+"/7d"]; ok {
			t.Errorf("%s reload: %s is still planned", step.how, step.removed)
		}
		if m["mintlify_exporter_config_last_reload_successful{}"] != 1 {
			t.Errorf("%s reload: last_reload_successful = %v", step.how, m["mintlify_exporter_config_last_reload_successful{}"])
		}
	}
	stopScraping()
	wg.Wait()
	if scrapes == 0 || failed > 0 {
		t.Errorf("%d of %d scrapes during the reloads failed", failed, scrapes)
	}
	for _, s := range api.Sent() {
		if s.Status != http.StatusOK {
			t.Errorf("%s %s for %s: HTTP %d", s.Method, s.Endpoint, s.Project, s.Status)
		}
	}
	x.Stop(t)
}

// TestBrokenReloadKeepsTheOldConfiguration reloads the built exporter with
// a file that does not validate: the old configuration keeps serving and
// sends nothing, the failure is a metric, a log line and a 500 with file
// and line; other methods get 405; a good file afterwards reloads.
func TestBrokenReloadKeepsTheOldConfiguration(t *testing.T) {
	t.Parallel()
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{Paths: 20, APIKey: "mint_test"})
	f := blackbox.NewReloadFile(t)
	f.Write("docs:7d")
	x := startExporter(t, nil, blackbox.ConfigArgs(api.URL, f.Path)...)
	m := blackbox.WaitMetrics(t, x.Base, 20*time.Second, map[string]float64{blackbox.Refreshed("docs", "7d"): 1, "mintlify_exporter_config_last_reload_successful{}": 1})
	firstSuccess := m["mintlify_exporter_config_last_reload_success_timestamp_seconds{}"]
	docs := blackbox.DataSeries(m, "docs")

	// A typo on line 11 (windowz), and a window that does not parse.
	good := f.Head + "  - id: docs\n    windows: [7d]\n    timezone: " + blackbox.NoonZone() + "\n    sources: {visitors: {}}\n"
	blackbox.WriteFile(t, f.Path, good+"  - id: blog\n    windowz: [7d]\n")
	code, body := blackbox.PostReload(t, x.Base)
	if code != http.StatusInternalServerError || !strings.Contains(body["error"], f.Path+":11") || !strings.Contains(body["error"], "windowz") {
		t.Errorf("POST /-/reload of a broken file: HTTP %d %v, want 500 naming %s:10 and windowz", code, body, f.Path)
	}
	blackbox.WriteFile(t, f.Path, good+"  - id: blog\n    windows: [7x]\n")
	sighupReload(t, x)
	if logs := x.Stderr.String(); !strings.Contains(logs, f.Path+":11: projects[1].windows") {
		t.Errorf("the failed SIGHUP reload is not logged with file, line and key:\n%s", logs)
	}
	for _, method := range []string{http.MethodGet, http.MethodPut} {
		if code, body := blackbox.CallReload(t, method, x.Base); code != http.StatusMethodNotAllowed || body["error"] == "" {
			t.Errorf("%s /-/reload: HTTP %d %v, want 405 with an error", method, code, body)
		}
	}
	m = blackbox.Scrape(t, x.Base)
	if m["mintlify_exporter_config_last_reload_successful{}"] != 0 || m["mintlify_exporter_config_last_reload_success_timestamp_seconds{}"] != firstSuccess {
		t.Errorf("after failed reloads: successful = %v, success time %v (was %v), want 0 and unchanged",
			m["mintlify_exporter_config_last_reload_successful{}"], m["mintlify_exporter_config_last_reload_success_timestamp_seconds{}"], firstSuccess)
	}
	for k, v := range docs {
		if m[k] != v {
			t.Errorf("after a failed reload %s = %v, want %v", k, m[k], v)
		}
	}
	if m[blackbox.Refreshed("docs", "7d")] != 1 || len(seriesOf(m, "blog")) != 0 || len(api.Analytics("")) != 1 {
		t.Errorf("the broken file changed what runs: docs success %v, blog series %v, %d requests",
			m[blackbox.Refreshed("docs", "7d")], seriesOf(m, "blog"), len(api.Analytics("")))
	}
	if st := blackbox.StatusReport(t, x.Base); st.Exporter.Config == nil || st.Exporter.Config.LastReloadSuccessful {
		t.Errorf("the status page does not show the failed reload: %+v", st.Exporter.Config)
	}

	// Fixed: the next reload takes it.
	f.Write("docs:7d", "blog:7d")
	if code, body := blackbox.PostReload(t, x.Base); code != http.StatusOK {
		t.Fatalf("POST /-/reload of the fixed file: HTTP %d %v", code, body)
	}
	m = blackbox.WaitMetrics(t, x.Base, 20*time.Second, map[string]float64{blackbox.Refreshed("blog", "7d"): 1, "mintlify_exporter_config_last_reload_successful{}": 1})
	if ts := m["mintlify_exporter_config_last_reload_success_timestamp_seconds{}"]; ts <= firstSuccess {
		t.Errorf("success timestamp %v did not move past %v", ts, firstSuccess)
	}
	if n := len(api.Analytics("")); n != 2 {
		t.Errorf("%d analytics requests, want 2 (docs at start, blog after the good reload)", n)
	}
	x.Stop(t)
}

// TestReloadAddingAWindowWalksOnlyIt: a window added to a project costs
// that window's first walk; the project's other windows keep their data
// and their place in the schedule.
func TestReloadAddingAWindowWalksOnlyIt(t *testing.T) {
	t.Parallel()
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{Paths: 20, APIKey: "mint_test"})
	f := blackbox.NewReloadFile(t)
	f.Write("docs:7d,30d")
	x := startExporter(t, nil, blackbox.ConfigArgs(api.URL, f.Path)...)
	m := blackbox.WaitMetrics(t, x.Base, 20*time.Second, map[string]float64{blackbox.Refreshed("docs", "7d"): 1, blackbox.Refreshed("docs", "30d"): 1})
	blackbox.Eventually(t, 10*time.Second, "no walk in flight", func() bool { return idle(blackbox.StatusReport(t, x.Base)) })
	before := demands(blackbox.StatusReport(t, x.Base))
	data := blackbox.DataSeries(m, "docs")

	f.Write("docs:7d,30d,90d")
	if code, body := blackbox.PostReload(t, x.Base); code != http.StatusOK {
		t.Fatalf("POST /-/reload: HTTP %d %v", code, body)
	}
	blackbox.WaitMetrics(t, x.Base, 20*time.Second, map[string]float64{blackbox.Refreshed("docs", "90d"): 1})
	settle(t, x.Base)
	if n := len(api.Analytics("")); n != 3 {
		t.Errorf("%d analytics requests, want 3: the first walks of 7d and 30d, and of the added 90d", n)
	}
	after := demands(blackbox.StatusReport(t, x.Base))
	for _, w := range []string{"docs/7d", "docs/30d"} {
		if !after[w].LastRefreshAt.Equal(before[w].LastRefreshAt) {
			t.Errorf("%s was walked again after a window was added beside it", w)
		}
	}
	m = blackbox.Scrape(t, x.Base)
	for k, v := range data {
		if m[k] != v {
			t.Errorf("%s = %v, want %v as before the reload", k, m[k], v)
		}
	}
	x.Stop(t)
}

// TestReloadIsBehindBasicAuth: with basic_auth_users in --web.config.file,
// POST /-/reload without credentials answers 401 and reloads nothing;
// with them it reloads.
func TestReloadIsBehindBasicAuth(t *testing.T) {
	t.Parallel()
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(t.TempDir(), "web.yml")
	blackbox.WriteFile(t, webConfig, "basic_auth_users:\n  ops: "+string(hash)+"\n")
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{Paths: 20, APIKey: "mint_test"})
	f := blackbox.NewReloadFile(t)
	f.Write("docs:7d")
	x := startExporter(t, nil, blackbox.ConfigArgs(api.URL, f.Path, "--web.config.file="+webConfig)...)
	reload := func(user, pass string) int {
		return testutil.StatusAs(t, http.MethodPost, x.Base+"/-/reload", user, pass, nil)
	}
	blackbox.Eventually(t, 10*time.Second, "the exporter to listen", func() bool {
		_, _, err := testutil.Get(t.Context(), x.Base+"/-/healthy")
		return err == nil
	})
	f.Write("docs:7d", "blog:7d")
	for _, c := range []struct{ user, pass string }{{"", ""}, {"ops", "wrong"}} {
		if code := reload(c.user, c.pass); code != http.StatusUnauthorized {
			t.Errorf("POST /-/reload as %q: HTTP %d, want 401", c.user, code)
		}
	}
	if n := reloadLogLines(x, "http"); n != 0 {
		t.Errorf("%d reloads logged after unauthenticated requests, want none", n)
	}
	if code := reload("ops", "pw"); code != http.StatusOK {
		t.Errorf("POST /-/reload with the password: HTTP %d, want 200", code)
	}
	// The log is read from the exporter's stderr as it comes.
	blackbox.Eventually(t, 10*time.Second, "the authenticated reload to be logged", func() bool { return reloadLogLines(x, "http") == 1 })
	x.Stop(t)
	if n := reloadLogLines(x, "http"); n != 1 {
		t.Errorf("%d reloads logged, want the authenticated one", n)
	}
}
