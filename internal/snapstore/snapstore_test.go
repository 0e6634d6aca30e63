package snapstore_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	kitlog "github.com/go-kit/log"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/snapstore"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

const key = "mint_snapstore"

// start is 15:00 UTC, so that today's counts of the fake are not zero.
var start = time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC)

// run is one run of the exporter's plan on dir: a scheduler on the fake
// API whose snapshots go to dir, on the shared clock.
type run struct {
	sched *refresh.Scheduler
	dir   *snapstore.Dir
	logs  *testutil.SyncBuffer
}

func newRun(t *testing.T, dir, apiURL string, clk *testutil.Clock, windows ...string) *run {
	t.Helper()
	logs := &testutil.SyncBuffer{}
	logger := kitlog.NewLogfmtLogger(logs)
	d, err := snapstore.Open(dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	b, err := budget.New(budget.Config{Limit: 1000, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	client, err := apiclient.New(apiclient.Config{BaseURL: apiURL, APIKey: key, AnalyticsBudget: b, MaxRetries: 0, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	var ws []analytics.Window
	for _, w := range windows {
		win, err := analytics.ParseWindow(w)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, win)
	}
	cfg := refresh.Config{
		Projects: []refresh.Project{{
			Project: analytics.Project{ID: "docs", Windows: ws, Location: time.UTC},
			Sources: []sources.Spec{{Name: sources.NameVisitors}, {Name: sources.NameSearches, Settings: map[string]int{"top_queries": 3}}},
		}},
		PageSize: apiclient.MaxPageSize, MinInterval: time.Hour, FinalDayDelay: -1, SiteInterval: -1, Now: clk.Now,
		Shared: d,
	}
	s, err := refresh.New(client, b, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return &run{sched: s, dir: d, logs: logs}
}

// refreshDue walks what is due, with a hang guard.
func (r *run) refreshDue(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r.sched.RefreshDue(ctx)
}

// served is every view's identity, last success, next due time and
// samples, as text: what /metrics and the plan make of the snapshots.
func served(r *run) []string {
	var out []string
	for _, v := range r.sched.Views() {
		out = append(out, fmt.Sprintf("%s/%s/%s/%s ok=%v last=%s next=%s interval=%s", v.Project, v.Source, v.Window, v.Scope,
			v.OK, v.LastSuccess.UTC().Format(time.RFC3339Nano), v.NextDue.UTC().Format(time.RFC3339Nano), v.Interval))
		if v.Data == nil {
			continue
		}
		def, _ := sources.ByName(v.Source)
		for _, f := range def.Families {
			f.Emit(v.Data, v.Project, v.Window, func(value float64, lv ...string) {
				out = append(out, fmt.Sprintf("  %s%v %v", f.Name, lv, value))
			})
		}
	}
	return out
}

func newAPI(t *testing.T, clk *testutil.Clock) *fakeapi.Server {
	t.Helper()
	fake := fakeapi.New(fakeapi.Options{APIKey: key, Paths: 30, Now: clk.Now})
	return fake
}

func serve(t *testing.T, fake *fakeapi.Server) string {
	t.Helper()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return srv.URL
}

func analyticsRequests(fake *fakeapi.Server) int64 {
	return fake.Requests(fakeapi.Visitors) + fake.Requests(fakeapi.Searches)
}

// A restarted plan on the same directory serves every snapshot as it was
// (values, refresh times, next due times) before it sends anything, and
// sends nothing until the plan has a walk due; then it walks as before.
func TestRestartServesSnapshotsAndResumesThePlan(t *testing.T) {
	clk := testutil.NewClock(start)
	fake := newAPI(t, clk)
	url := serve(t, fake)
	dir := t.TempDir()

	first := newRun(t, dir, url, clk, "1d", "7d")
	first.refreshDue(t)
	before := served(first)
	walked := analyticsRequests(fake)
	if walked == 0 || !slices.ContainsFunc(before, func(s string) bool { return strings.HasPrefix(s, "  ") }) {
		t.Fatalf("the first run walked %d requests and serves %q: nothing to restore", walked, before)
	}
	first.sched.Close()

	clk.Advance(10 * time.Minute) // down for ten minutes
	second := newRun(t, dir, url, clk, "1d", "7d")
	for _, v := range second.sched.Views() {
		if v.Data != nil {
			t.Fatalf("%s/%s served before the plan read its directory: the restore below proves nothing", v.Source, v.Window)
		}
	}
	second.sched.Restore(t.Context())
	if got := served(second); !slices.Equal(got, before) {
		t.Fatalf("restored plan serves\n%s\nwant what the first run served\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
	}
	second.refreshDue(t)
	if n := analyticsRequests(fake) - walked; n != 0 {
		t.Fatalf("the restarted plan sent %d analytics requests ten minutes into an hour's interval, want 0", n)
	}
	// The plan goes on from the restored walks: due an hour after the
	// first run's walks started, every demand once.
	clk.Advance(50 * time.Minute)
	second.refreshDue(t)
	if n := analyticsRequests(fake) - walked; n != walked {
		t.Fatalf("an hour after the first walks the restarted plan sent %d requests, want the first run's %d again", n, walked)
	}
}

// A damaged file (its data cut, or its header) is skipped with a warning,
// its demand alone walked again, and then stored whole again.
func TestDamagedSnapshotIsWalkedAgain(t *testing.T) {
	for _, damage := range []struct {
		name string
		cut  func([]byte) []byte
	}{
		{"data cut", func(b []byte) []byte { return b[:len(b)-9] }},
		{"checksum", func(b []byte) []byte { b = slices.Clone(b); b[len(b)-10] ^= 0xff; return b }},
		{"format", func(b []byte) []byte { return bytes.Replace(b, []byte("snapshot 2\n"), []byte("snapshot 9\n"), 1) }},
		{"version", func(b []byte) []byte { return append([]byte(nil), bytes.Replace(b, []byte("\n"), []byte("\nx"), 2)...) }},
	} {
		t.Run(damage.name, func(t *testing.T) {
			clk := testutil.NewClock(start)
			fake := newAPI(t, clk)
			url := serve(t, fake)
			dir := t.TempDir()
			first := newRun(t, dir, url, clk, "7d")
			first.refreshDue(t)
			before := served(first)
			first.sched.Close()
			files := snapFiles(t, dir)
			if len(files) != 2 {
				t.Fatalf("%d snapshot files for 2 demands: %v", len(files), files)
			}
			data, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(files[0], damage.cut(data), 0o600); err != nil {
				t.Fatal(err)
			}

			clk.Advance(time.Minute)
			second := newRun(t, dir, url, clk, "7d")
			second.sched.Restore(t.Context())
			restored := 0
			for _, v := range second.sched.Views() {
				if v.Data != nil {
					restored++
				}
			}
			if restored != 1 {
				t.Fatalf("%d demands restored, want the undamaged one", restored)
			}
			if !strings.Contains(second.logs.String(), "level=warn") || !strings.Contains(second.logs.String(), "snapshot") {
				t.Errorf("no warning about the damaged file:\n%s", second.logs)
			}
			walked := analyticsRequests(fake)
			second.refreshDue(t)
			if n := analyticsRequests(fake) - walked; n != 1 {
				t.Errorf("%d requests after the restart, want one walk of the damaged demand", n)
			}
			second.sched.Close()
			third := newRun(t, dir, url, clk, "7d")
			third.sched.Restore(t.Context())
			for _, v := range third.sched.Views() {
				if v.Data == nil {
					t.Errorf("%s/%s not restored after its walk stored it again", v.Source, v.Window)
				}
			}
			if len(before) == 0 {
				t.Fatal("nothing served")
			}
		})
	}
}

// A demand the configuration no longer has loses its file, at the start
// and on a reload; one walked otherwise (its key changes) too.
func TestRemovedDemandsAreDeleted(t *testing.T) {
	clk := testutil.NewClock(start)
	fake := newAPI(t, clk)
	url := serve(t, fake)
	dir := t.TempDir()
	first := newRun(t, dir, url, clk, "1d", "7d", "30d")
	first.refreshDue(t)
	first.sched.Close()
	if n := len(snapFiles(t, dir)); n != 6 {
		t.Fatalf("%d files for 2 sources x 3 windows", n)
	}
	second := newRun(t, dir, url, clk, "1d", "7d")
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // Run reads the directory, forgets, then stops at once
	second.sched.Run(ctx)
	if n := len(snapFiles(t, dir)); n != 4 {
		t.Fatalf("%d files after a start without 30d, want 4", n)
	}

	third := newRun(t, dir, url, clk, "1d", "7d")
	third.sched.Restore(t.Context())
	var p refresh.Project
	p.ID, p.Location = "docs", time.UTC
	p.Windows = []analytics.Window{{Name: "1d", Days: 1}}
	p.Sources = []sources.Spec{{Name: sources.NameVisitors}}
	if err := third.sched.Update([]refresh.Project{p}); err != nil {
		t.Fatal(err)
	}
	if n := len(snapFiles(t, dir)); n != 1 {
		t.Fatalf("%d files after a reload to one demand, want 1", n)
	}
}

// Publish writes only a newer version, atomically; Open removes what a
// crash left of a write, and Claim's tokens stay above what is stored.
func TestPublishAndOpen(t *testing.T) {
	dir := t.TempDir()
	d, err := snapstore.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := d.Publish(ctx, "k", 7, []byte("seven"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := d.Publish(ctx, "k", 5, []byte("five"), time.Hour); err != nil {
		t.Fatal(err)
	}
	// A crash mid-write leaves a temporary file beside the whole one.
	if err := os.WriteFile(filepath.Join(dir, ".x.snap.123.tmp"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err = snapstore.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, v, ok, err := d.Fetch(ctx, "k")
	if err != nil || !ok || v != 7 || string(data) != "seven" {
		t.Fatalf("Fetch = %q, %d, %v, %v; want seven at version 7", data, v, ok, err)
	}
	if _, tok, release, err := d.Claim(ctx, "k"); err != nil || tok <= 7 {
		t.Fatalf("Claim after a restart = %d, %v; want a token above the stored 7", tok, err)
	} else {
		release()
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries after Open, want the one snapshot", len(ents))
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := d.Publish(cancelled, "k", 9, []byte("nine"), time.Hour); err == nil {
		t.Error("Publish with an ended context wrote")
	}
	if _, v, _, _ := d.Fetch(ctx, "k"); v != 7 {
		t.Errorf("version %d after a cancelled publish, want 7", v)
	}
}

// snapFiles are the snapshot files in dir.
func snapFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.snap"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// FuzzSnapshotFile: whatever a file holds (a cut, a flipped bit, another
// program's file), Open and Fetch never panic nor read more than MaxBytes,
// and the file as written gives back its data.
func FuzzSnapshotFile(f *testing.F) {
	dir := f.TempDir()
	d, err := snapstore.Open(dir, nil)
	if err != nil {
		f.Fatal(err)
	}
	if err := d.Publish(f.Context(), "k", 3, []byte(`{"published":true}`), time.Hour); err != nil {
		f.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.snap"))
	whole, err := os.ReadFile(files[0])
	if err != nil {
		f.Fatal(err)
	}
	name := filepath.Base(files[0])
	f.Add(whole)
	f.Add(whole[:len(whole)/2])
	f.Add([]byte("mintlify_exporter analytics snapshot 1\nk\n3\n"))
	f.Add([]byte("mintlify_exporter analytics snapshot 2\nk\n3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
		d, err := snapstore.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		data, _, ok, err := d.Fetch(t.Context(), "k")
		if len(data) > snapstore.MaxBytes || (ok && err != nil) || (!ok && data != nil) {
			t.Fatalf("Fetch = %d bytes, %v, %v", len(data), ok, err)
		}
		if bytes.Equal(b, whole) && (!ok || err != nil || string(data) != `{"published":true}`) {
			t.Fatalf("the file as written reads as %q, %v, %v", data, ok, err)
		}
	})
}

// TestEncodedBlobs: the encoder's files are written whole, read back,
// deleted, and Keep deletes all but the named (temporary files too).
func TestEncodedBlobs(t *testing.T) {
	state := t.TempDir()
	b := snapstore.NewRoot(state, nil).Encoded()
	if _, err := b.Load("a.enc"); !os.IsNotExist(err) {
		t.Fatalf("Load before any Save: %v, want not exist", err)
	}
	for _, name := range []string{"a.enc", "b.enc", "c.enc"} {
		if err := b.Save(context.Background(), name, []byte("data of "+name)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := b.Load("b.enc"); err != nil || string(got) != "data of b.enc" {
		t.Fatalf("Load: %q, %v", got, err)
	}
	if err := b.Save(context.Background(), "../x", nil); err == nil {
		t.Error("Save of a name out of the directory succeeded")
	}
	dir := filepath.Join(state, snapstore.EncodedDirName)
	if err := os.WriteFile(filepath.Join(dir, ".a.enc.1.tmp"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.Remove("c.enc"); err != nil {
		t.Fatal(err)
	}
	if err := b.Keep([]string{"a.enc"}); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "a.enc" {
		t.Errorf("after Keep: %v, want a.enc alone", ents)
	}
}
