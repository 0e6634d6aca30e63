package orgs

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

var day1 = analytics.Window{Name: "1d", Days: 1}

func project(id, org string) config.Project {
	return config.Project{PlanProject: refresh.Project{Project: analytics.Project{ID: id, Windows: []analytics.Window{day1}}, Sources: []sources.Spec{{Name: sources.NameVisitors}}}, Organization: org}
}

// start runs a Set against the fake over HTTP; walks never repeat within
// the test (an hour's interval), so every request is a planned first walk.
func start(t *testing.T, fake *fakeapi.Server) *Set {
	t.Helper()
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)
	ctx, cancel := context.WithCancel(context.Background())
	s := New(ctx, Settings{
		Client:    apiclient.Config{BaseURL: api.URL, Timeout: 5 * time.Second},
		Refresh:   refresh.Config{PageSize: apiclient.MaxPageSize, MinInterval: time.Hour, FinalDayDelay: -1, SiteInterval: -1},
		LedgerDir: t.TempDir(),
	}, nil)
	t.Cleanup(func() { cancel(); s.Wait() })
	return s
}

// waitData waits until every id has data, and no other project shows.
func waitData(t *testing.T, s *Set, ids ...string) map[string]refresh.View {
	t.Helper()
	var got map[string]refresh.View
	testutil.Eventually(t, 0, fmt.Sprintf("data for exactly %v", ids), func() bool {
		got = map[string]refresh.View{}
		for _, v := range s.Views() {
			got[v.Project] = v
		}
		ready := len(got) == len(ids)
		for _, id := range ids {
			if got[id].Data == nil {
				ready = false
			}
		}
		return ready
	}, func() string { return fmt.Sprintf("views %v", got) })
	return got
}

func TestOrganizationsUseTheirOwnKeyAndBudget(t *testing.T) {
	fake := fakeapi.New(fakeapi.Options{Paths: 10, AnalyticsBudget: 100, Organizations: []fakeapi.Organization{
		{Key: "mint_a", Projects: []string{"a1", "a2", "a3"}},
		{Key: "mint_b", Projects: []string{"b1"}},
		{Key: "mint_a_rotated", Projects: []string{"a1", "a2", "a3"}},
	}})
	s := start(t, fake)
	cfg := &config.Config{
		Organizations: []config.Organization{{Name: "a", APIKey: "mint_a", AnalyticsBudget: 10}, {Name: "b", APIKey: "mint_b", AnalyticsBudget: 5}},
		Projects:      []config.Project{project("a1", "a"), project("a2", "a"), project("b1", "b")},
	}
	if err := s.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	before := waitData(t, s, "a1", "a2", "b1")
	// Each project's requests carry its own organization's key (another
	// organization's key gets 403 from the fake, and no data).
	if a, b := fake.AnalyticsRequestsByKey("mint_a"), fake.AnalyticsRequestsByKey("mint_b"); a != 2 || b != 1 {
		t.Errorf("requests by key: a=%d b=%d, want 2 and 1", a, b)
	}
	budgets := s.Budgets()
	if budgets[0].Organization() != "a" || budgets[0].Spent() != 2 || budgets[0].Limit() != 10 ||
		budgets[1].Organization() != "b" || budgets[1].Spent() != 1 || budgets[1].Limit() != 5 {
		t.Errorf("budgets: a %d/%d, b %d/%d", budgets[0].Spent(), budgets[0].Limit(), budgets[1].Spent(), budgets[1].Limit())
	}

	// A reload: a2 goes, a3 comes, b's budget changes, a's key rotates.
	cfg2 := &config.Config{
		Organizations: []config.Organization{{Name: "a", APIKey: "mint_a_rotated", AnalyticsBudget: 10}, {Name: "b", APIKey: "mint_b", AnalyticsBudget: 7}},
		Projects:      []config.Project{project("a1", "a"), project("a3", "a"), project("b1", "b")},
	}
	if err := s.Apply(cfg2); err != nil {
		t.Fatal(err)
	}
	after := waitData(t, s, "a1", "a3", "b1")
	// Exactly one request: a3's first walk, with the rotated key. a1 and
	// b1 keep their snapshots; a2 is no longer served.
	if a, r, b := fake.AnalyticsRequestsByKey("mint_a"), fake.AnalyticsRequestsByKey("mint_a_rotated"), fake.AnalyticsRequestsByKey("mint_b"); a != 2 || r != 1 || b != 1 {
		t.Errorf("requests after the reload: a=%d rotated=%d b=%d, want 2, 1, 1", a, r, b)
	}
	for _, id := range []string{"a1", "b1"} {
		if after[id].Data != before[id].Data {
			t.Errorf("%s lost its snapshot in the reload", id)
		}
	}
	if got := s.Budgets()[1].Limit(); got != 7 {
		t.Errorf("b's budget after the reload = %d, want 7", got)
	}
	if _, err := s.Client("a2"); err == nil {
		t.Error("a2 still has a client after it was removed")
	}

	// Removing an organization stops its plan and its series.
	cfg3 := &config.Config{Organizations: cfg2.Organizations[:1], Projects: cfg2.Projects[:2]}
	if err := s.Apply(cfg3); err != nil {
		t.Fatal(err)
	}
	waitData(t, s, "a1", "a3")
	if n := len(s.Budgets()); n != 1 {
		t.Errorf("%d budgets after removing b, want 1", n)
	}
}

// createJob and getJob call the API as the engine does: a create with the
// project's organization's client, a poll with its FollowClient.
func createJob(s *Set, project, prompt string) (*apiclient.Job, error) {
	c, err := s.Client(project)
	if err != nil {
		return nil, err
	}
	job, _, err := c.CreateJobWithStatus(context.Background(), project, prompt)
	return job, err
}

func getJob(s *Set, project, id string) (*apiclient.Job, error) {
	c, err := s.FollowClient(project)
	if err != nil {
		return nil, err
	}
	return c.GetJob(context.Background(), project, id)
}

// Agent job calls go out with the key of the job's project's organization.
func TestJobCallsUseTheProjectsOrganization(t *testing.T) {
	fake := fakeapi.New(fakeapi.Options{Organizations: []fakeapi.Organization{
		{Key: "mint_a", Projects: []string{"a1"}}, {Key: "mint_b", Projects: []string{"b1"}},
	}})
	s := start(t, fake)
	cfg := &config.Config{
		Organizations: []config.Organization{{Name: "a", APIKey: "mint_a", AnalyticsBudget: 10}, {Name: "b", APIKey: "mint_b", AnalyticsBudget: 10}},
		Projects:      []config.Project{project("a1", "a"), project("b1", "b")},
	}
	if err := s.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a1", "b1"} {
		job, err := createJob(s, p, "fix the docs")
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if _, err := getJob(s, p, job.ID); err != nil {
			t.Errorf("%s: get: %v", p, err)
		}
	}
	if _, err := createJob(s, "nowhere", "x"); err == nil {
		t.Error("a create for an unconfigured project went through")
	}

	// A reload removes a1, and b1 with its organization: their tracked
	// jobs are still polled to their end, with their organization's key;
	// nothing new is created for them.
	jobs := map[string]string{}
	for _, p := range []string{"a1", "b1"} {
		job, err := createJob(s, p, "fix the docs")
		if err != nil {
			t.Fatal(err)
		}
		jobs[p] = job.ID
	}
	if err := s.Apply(&config.Config{Organizations: cfg.Organizations[:1], Projects: []config.Project{project("a2", "a")}}); err != nil {
		t.Fatal(err)
	}
	for p, id := range jobs {
		if _, err := getJob(s, p, id); err != nil {
			t.Errorf("%s, removed by a reload: polling its tracked job: %v", p, err)
		}
		if _, err := createJob(s, p, "x"); err == nil {
			t.Errorf("%s, removed by a reload: a create went through", p)
		}
	}
}

// A 429 for one organization's key pauses and halves that organization's
// budget only: another organization's walks go out at once, unslowed.
func TestA429SlowsOnlyItsOrganization(t *testing.T) {
	fake := fakeapi.New(fakeapi.Options{Paths: 10, AnalyticsBudget: 2, Organizations: []fakeapi.Organization{
		{Key: "mint_a", Projects: []string{"a1", "a2", "a3"}},
		{Key: "mint_b", Projects: []string{"b1", "b2"}},
	}})
	s := start(t, fake)
	a := config.Organization{Name: "a", APIKey: "mint_a", AnalyticsBudget: 10}
	b := config.Organization{Name: "b", APIKey: "mint_b", AnalyticsBudget: 10}
	// a plans three walks where its key's real quota allows two.
	if err := s.Apply(&config.Config{Organizations: []config.Organization{a},
		Projects: []config.Project{project("a1", "a"), project("a2", "a"), project("a3", "a")}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 0, "a's budget paused after its key's quota ran out", func() bool { return !s.Budgets()[0].PausedUntil().IsZero() },
		func() string { return fmt.Sprintf("%d rejections", fake.AnalyticsRejections()) })
	// While a is paused, b starts: its walks go out, with its own key.
	if err := s.Apply(&config.Config{Organizations: []config.Organization{a, b},
		Projects: []config.Project{project("a1", "a"), project("a2", "a"), project("a3", "a"), project("b1", "b"), project("b2", "b")}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 0, "b's 2 walks at once while a is paused", func() bool { return fake.AnalyticsRequestsByKey("mint_b") >= 2 },
		func() string { return fmt.Sprintf("b sent %d requests", fake.AnalyticsRequestsByKey("mint_b")) })
	budgets := s.Budgets()
	if budgets[1].Organization() != "b" || !budgets[1].PausedUntil().IsZero() || budgets[1].Effective() != 10 {
		t.Errorf("b's budget: paused until %v, effective %d; want no pause and its full 10", budgets[1].PausedUntil(), budgets[1].Effective())
	}
	if budgets[0].PausedUntil().IsZero() || budgets[0].Effective() != 5 {
		t.Errorf("a's budget: paused until %v, effective %d; want paused and halved to 5", budgets[0].PausedUntil(), budgets[0].Effective())
	}
	if got := fake.AnalyticsRejections(); got != 1 {
		t.Errorf("%d requests refused with 429, want a's one", got)
	}
}

// TestApplyChangesNothingWhenALaterOrganizationFails: Apply prepares every
// organization before it changes any. A reload whose last organization
// fails (its new plan refused, or, new, its ledger unreadable) leaves the
// earlier organizations as they ran: key, budget, projects and plan.
func TestApplyChangesNothingWhenALaterOrganizationFails(t *testing.T) {
	fake := fakeapi.New(fakeapi.Options{Paths: 10, AnalyticsBudget: 100, Organizations: []fakeapi.Organization{
		{Key: "mint_a", Projects: []string{"a1", "a2"}},
		{Key: "mint_b", Projects: []string{"b1"}},
	}})
	s := start(t, fake)
	before := &config.Config{
		Organizations: []config.Organization{{Name: "a", APIKey: "mint_a", AnalyticsBudget: 10}, {Name: "b", APIKey: "mint_b", AnalyticsBudget: 5}},
		Projects:      []config.Project{project("a1", "a"), project("b1", "b")},
	}
	if err := s.Apply(before); err != nil {
		t.Fatal(err)
	}
	waitData(t, s, "a1", "b1")

	badPlan := project("b1", "b")
	badPlan.Sources = []sources.Spec{{Name: "nope"}} // no such source: the plan refuses it
	unreadable := filepath.Join(s.settings.LedgerDir, filepath.Base(config.LedgerPath(s.settings.LedgerDir, "c")))
	if err := os.Mkdir(unreadable, 0o700); err != nil { // a directory where the ledger file goes
		t.Fatal(err)
	}
	for name, later := range map[string]*config.Config{
		"plan of a running organization refused": {
			Organizations: []config.Organization{{Name: "a", APIKey: "mint_a_rotated", AnalyticsBudget: 20}, {Name: "b", APIKey: "mint_b", AnalyticsBudget: 5}},
			Projects:      []config.Project{project("a1", "a"), project("a2", "a"), badPlan},
		},
		"ledger of a new organization unreadable": {
			Organizations: []config.Organization{{Name: "a", APIKey: "mint_a_rotated", AnalyticsBudget: 20}, {Name: "b", APIKey: "mint_b", AnalyticsBudget: 5}, {Name: "c", APIKey: "mint_c", AnalyticsBudget: 5}},
			Projects:      []config.Project{project("a1", "a"), project("a2", "a"), project("b1", "b"), project("c1", "c")},
		},
	} {
		if err := s.Apply(later); err == nil {
			t.Fatalf("%s: Apply succeeded", name)
		}
		if got := s.Projects(); !slices.Equal(got, []string{"a1", "b1"}) {
			t.Errorf("%s: projects %v, want a1 b1 as before", name, got)
		}
		budgets := s.Budgets()
		if len(budgets) != 2 || budgets[0].Limit() != 10 || budgets[1].Limit() != 5 {
			t.Errorf("%s: %d budgets (a's %d), want a's 10 and b's 5 as before", name, len(budgets), budgets[0].Limit())
		}
		if _, err := s.Client("a2"); err == nil {
			t.Errorf("%s: a2 has a client: a changed", name)
		}
		var planned []string
		for _, v := range s.Views() {
			planned = append(planned, v.Project+"/"+v.Window)
		}
		if !slices.Equal(planned, []string{"a1/1d", "b1/1d"}) {
			t.Errorf("%s: plan %v, want a1/1d b1/1d as before", name, planned)
		}
		c, err := s.Client("a1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.VisitorsTotals(context.Background(), "a1", apiclient.VisitorsQuery{DateFrom: "2026-03-01", DateTo: "2026-03-02"}); err != nil {
			t.Errorf("%s: a's client no longer reads with its key: %v", name, err)
		}
	}
}

// TestPreparedChangesNothingUntilCommit: Prepare, which a reload runs for
// every subsystem before it commits any, leaves the running organizations
// as they are; Abandon drops what it prepared, and a Commit of the same
// configuration applies it in full.
func TestPreparedChangesNothingUntilCommit(t *testing.T) {
	fake := fakeapi.New(fakeapi.Options{Paths: 10, AnalyticsBudget: 100, Organizations: []fakeapi.Organization{
		{Key: "mint_a", Projects: []string{"a1", "a2"}},
		{Key: "mint_c", Projects: []string{"c1"}},
	}})
	s := start(t, fake)
	if err := s.Apply(&config.Config{
		Organizations: []config.Organization{{Name: "a", APIKey: "mint_a", AnalyticsBudget: 10}},
		Projects:      []config.Project{project("a1", "a")},
	}); err != nil {
		t.Fatal(err)
	}
	waitData(t, s, "a1")
	later := &config.Config{
		Organizations: []config.Organization{{Name: "a", APIKey: "mint_a", AnalyticsBudget: 20}, {Name: "c", APIKey: "mint_c", AnalyticsBudget: 5}},
		Projects:      []config.Project{project("a1", "a"), project("a2", "a"), project("c1", "c")},
	}
	unchanged := func(when string) {
		t.Helper()
		if got := s.Projects(); !slices.Equal(got, []string{"a1"}) {
			t.Errorf("%s: projects %v, want a1 alone", when, got)
		}
		if b := s.Budgets(); len(b) != 1 || b[0].Limit() != 10 {
			t.Errorf("%s: %d budgets (the first of %d), want a's alone, of 10", when, len(b), b[0].Limit())
		}
		if len(s.Views()) != 1 {
			t.Errorf("%s: %d views, want a1's", when, len(s.Views()))
		}
	}
	p, err := s.Prepare(later)
	if err != nil {
		t.Fatal(err)
	}
	unchanged("prepared")
	p.Abandon()
	unchanged("abandoned")

	if p, err = s.Prepare(later); err != nil {
		t.Fatalf("prepared again after Abandon: %v", err)
	}
	p.Commit()
	if got := s.Projects(); !slices.Equal(got, []string{"a1", "a2", "c1"}) {
		t.Errorf("committed: projects %v, want a1 a2 c1", got)
	}
	if b := s.Budgets(); len(b) != 2 || b[0].Limit() != 20 || b[1].Limit() != 5 {
		t.Errorf("committed: %d budgets, want a's 20 and c's 5", len(b))
	}
	waitData(t, s, "a1", "a2", "c1")
}

// TestStatusShowsWhatMetricsServe: the status page shows a demand as
// /metrics serves it (the views the encoder published), not as the
// scheduler has it a moment earlier (issue 38, item 4): a walk that ended
// after the encoder's last read is not "ok" yet.
func TestStatusShowsWhatMetricsServe(t *testing.T) {
	fake := fakeapi.New(fakeapi.Options{Paths: 10, AnalyticsBudget: 100, Organizations: []fakeapi.Organization{{Key: "mint_a", Projects: []string{"a1"}}}})
	s := start(t, fake)
	if err := s.Apply(&config.Config{Organizations: []config.Organization{{Name: "a", APIKey: "mint_a", AnalyticsBudget: 10}},
		Projects: []config.Project{project("a1", "a")}}); err != nil {
		t.Fatal(err)
	}
	waitData(t, s, "a1")
	live := s.Views()
	// The encoder read the views before the walk ended.
	before := slices.Clone(live)
	for i := range before {
		before[i].Attempted, before[i].OK, before[i].Data, before[i].Running = false, false, nil, true
	}
	_, demands := s.Status(before)
	if len(demands) != 1 || demands[0].Result != "" || !demands[0].Running || demands[0].Exported {
		t.Errorf("demands %+v, want the walk still running, not exported", demands)
	}
	_, demands = s.Status(live)
	if len(demands) != 1 || demands[0].Result != "ok" || !demands[0].Exported {
		t.Errorf("demands %+v, want ok and exported once published", demands)
	}
}
