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
	"syscall"
	"testing"
	"time"

	kitlog "github.com/go-kit/log"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/collector"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/snapstore"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

const key = "mint_snapstore"

// A directory is the plan's Shared for a process alone, and the
// encoder's store.
var (
	_ refresh.Shared         = (*snapstore.Dir)(nil)
	_ refresh.Forgetter      = (*snapstore.Dir)(nil)
	_ collector.EncodedStore = (*snapstore.Blobs)(nil)
)

// A file holds what replicas share, with the same bound (issue 45, 2).
func TestTheBoundIsRedis(t *testing.T) {
	if snapstore.MaxBytes != refresh.MaxRedisBlobBytes {
		t.Errorf("snapstore.MaxBytes = %d, refresh.MaxRedisBlobBytes = %d", snapstore.MaxBytes, refresh.MaxRedisBlobBytes)
	}
}

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

// What is not a whole file of this format under a demand's name (cut,
// damaged, of an earlier format, another demand's file with its key
// edited, or not a regular file at all: a FIFO, a socket, a symlink to a
// device, a directory, a sparse file of 2 GiB) is skipped with a warning,
// at once and without reading it whole, never served; its demand alone is
// walked again, and then stored whole again. Before the checksum over key
// and body, another demand's file with its key edited was served as this
// one's (issue 45 item 5); before statedir.Open, the FIFO hung Open for
// ever and the sparse file was read whole (items 1 and 2).
func TestDamagedSnapshotIsWalkedAgain(t *testing.T) {
	write := func(b []byte) func(*testing.T, string, []byte, []byte) {
		return func(t *testing.T, path string, _, _ []byte) {
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	edit := func(f func(mine, other []byte) []byte) func(*testing.T, string, []byte, []byte) {
		return func(t *testing.T, path string, mine, other []byte) { write(f(mine, other))(t, path, nil, nil) }
	}
	for _, damage := range []struct {
		name  string
		plant func(t *testing.T, path string, mine, other []byte)
	}{
		{"body cut", edit(func(b, _ []byte) []byte { return b[:len(b)-9] })},
		{"a bit flipped", edit(func(b, _ []byte) []byte { b = slices.Clone(b); b[len(b)-10] ^= 0x01; return b })},
		{"version edited", edit(func(b, _ []byte) []byte {
			f := bytes.SplitN(slices.Clone(b), []byte(" "), 6)
			f[4][0] ^= 0x01 // a digit for another
			return bytes.Join(f, []byte(" "))
		})},
		{"another demand's file, its key edited", edit(func(mine, other []byte) []byte {
			return bytes.Replace(other, []byte(keyOf(t, other)), []byte(keyOf(t, mine)), 1)
		})},
		{"format 2 of earlier versions", write([]byte("mintlify_exporter analytics snapshot 2\nk\n3\n\x1f\x8b"))},
		{"FIFO", func(t *testing.T, path string, _, _ []byte) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"socket", func(t *testing.T, path string, _, _ []byte) {
			if err := syscall.Mknod(path, syscall.S_IFSOCK|0o600, 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink to a device", func(t *testing.T, path string, _, _ []byte) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}},
		{"directory", func(t *testing.T, path string, _, _ []byte) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{"sparse file of 2 GiB", func(t *testing.T, path string, mine, _ []byte) {
			write(mine)(t, path, nil, nil)
			if err := os.Truncate(path, 2<<30); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(damage.name, func(t *testing.T) {
			clk := testutil.NewClock(start)
			fake := newAPI(t, clk)
			url := serve(t, fake)
			dir := t.TempDir()
			first := newRun(t, dir, url, clk, "7d")
			first.refreshDue(t)
			first.sched.Close()
			files := snapFiles(t, dir)
			if len(files) != 2 {
				t.Fatalf("%d snapshot files for 2 demands: %v", len(files), files)
			}
			mine, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			other, err := os.ReadFile(files[1])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(files[0]); err != nil {
				t.Fatal(err)
			}
			damage.plant(t, files[0], mine, other)

			clk.Advance(time.Minute)
			second := newRun(t, dir, url, clk, "7d")
			second.sched.Restore(t.Context())
			var restored []string
			for _, v := range second.sched.Views() {
				if v.Data != nil {
					restored = append(restored, v.Source)
				}
			}
			if want := keyOf(t, other); len(restored) != 1 || !strings.Contains(want, "/"+restored[0]+"/") {
				t.Fatalf("restored %v, want the undamaged demand alone (%s)", restored, want)
			}
			if logs := second.logs.String(); !strings.Contains(logs, "level=warn") || !strings.Contains(logs, filepath.Base(files[0])) {
				t.Errorf("no warning naming the damaged file:\n%s", logs)
			}
			walked := analyticsRequests(fake)
			second.refreshDue(t)
			if n := analyticsRequests(fake) - walked; n != 1 {
				t.Errorf("%d requests after the restart, want one walk of the damaged demand", n)
			}
			for _, v := range second.sched.Views() {
				if v.Data == nil {
					t.Errorf("%s/%s not served after its walk", v.Source, v.Window)
				}
			}
			second.sched.Close()
			if damage.name == "directory" {
				return // a walk cannot store over it: it is served from memory
			}
			third := newRun(t, dir, url, clk, "7d")
			third.sched.Restore(t.Context())
			for _, v := range third.sched.Views() {
				if v.Data == nil {
					t.Errorf("%s/%s not restored after its walk stored it again", v.Source, v.Window)
				}
			}
		})
	}
}

// keyOf is the key in a file's header.
func keyOf(t *testing.T, file []byte) string {
	t.Helper()
	line, _, _ := bytes.Cut(file, []byte("\n"))
	f := strings.SplitN(string(line), " ", 7)
	if len(f) != 7 || f[0]+" "+f[1]+" "+f[2] != "mintlify_exporter snapshot 3" {
		t.Fatalf("not a file of format 3: %.80q", line)
	}
	return f[6]
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

// FuzzSnapshotFile: whatever a file holds (a cut, a flipped bit, an
// edited key or version, another program's file), Open and Fetch never
// panic nor hand over more than MaxBytes, and what they hand over is
// exactly what Publish wrote: the file as written gives back its data.
func FuzzSnapshotFile(f *testing.F) {
	dir := f.TempDir()
	d, err := snapstore.Open(dir, nil)
	if err != nil {
		f.Fatal(err)
	}
	if err := d.Publish(f.Context(), "k", 3, []byte("published data"), time.Hour); err != nil {
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
	f.Add(bytes.Replace(whole, []byte(" k\n"), []byte(" j\n"), 1))
	f.Add([]byte("mintlify_exporter analytics snapshot 2\nk\n3\n"))
	f.Add([]byte("mintlify_exporter snapshot 3 00000000 3 0 k\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
		d, err := snapstore.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		data, v, ok, err := d.Fetch(t.Context(), "k")
		if len(data) > snapstore.MaxBytes || err != nil || (!ok && data != nil) {
			t.Fatalf("Fetch = %d bytes, %v, %v", len(data), ok, err)
		}
		if bytes.Equal(b, whole) && (!ok || v != 3 || string(data) != "published data") {
			t.Fatalf("the file as written reads as %q, %d, %v", data, v, ok)
		}
		if ok { // then b is what Publish writes of data
			again := t.TempDir()
			d, err := snapstore.Open(again, nil)
			if err == nil {
				err = d.Publish(t.Context(), "k", v, data, time.Hour)
			}
			written, _ := os.ReadFile(filepath.Join(again, name))
			if err != nil || !bytes.Equal(written, b) {
				t.Fatalf("read %q at version %d from a file Publish does not write: %q (%v)", data, v, b, err)
			}
		}
	})
}

// The encoder's files are written whole, read back by key, deleted, and
// Keep deletes all but the named (temporary files too). What a key's file
// cannot vouch for is not handed over: another key's file moved there
// (logged at info: it costs an encoding), a damaged one or a FIFO
// (warnings; the FIFO read without blocking).
func TestEncodedBlobs(t *testing.T) {
	state := t.TempDir()
	var logs testutil.SyncBuffer
	b := snapstore.NewRoot(state, kitlog.NewLogfmtLogger(&logs)).Encoded()
	if got := b.Load("a"); got != nil {
		t.Fatalf("Load before any Save: %q", got)
	}
	for _, key := range []string{"a", "b", "c", "d", "e"} {
		if err := b.Save(t.Context(), key, []byte("data of "+key)); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.Load("b"); string(got) != "data of b" {
		t.Fatalf("Load: %q", got)
	}
	if logs.String() != "" {
		t.Fatalf("logs of good files:\n%s", logs.String())
	}
	dir := filepath.Join(state, snapstore.EncodedDirName)
	file := func(key string) string {
		for _, f := range glob(t, dir, "*.enc") {
			if data, _ := os.ReadFile(f); strings.HasSuffix(string(data), "data of "+key) {
				return f
			}
		}
		t.Fatalf("no file of %s", key)
		return ""
	}
	a, b2, c, d := file("a"), file("b"), file("c"), file("d")
	if err := os.Rename(a, b2); err != nil { // a's file in b's place
		t.Fatal(err)
	}
	data, _ := os.ReadFile(c)
	data[len(data)-1] ^= 0x01
	if err := os.WriteFile(c, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(d); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(d, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"a", "b", "c", "d"} {
		if got := b.Load(key); got != nil {
			t.Errorf("Load(%s) = %q, want nothing", key, got)
		}
	}
	l := logs.String()
	if !strings.Contains(l, `level=info msg="encoded analytics snapshot of another snapshot: encoded again" file=`+b2) ||
		!strings.Contains(l, "level=warn") || !strings.Contains(l, c) || !strings.Contains(l, d+": not a regular file: a FIFO") {
		t.Errorf("want the moved file at info, the damaged one and the FIFO as warnings:\n%s", l)
	}
	if err := os.WriteFile(filepath.Join(dir, ".x.enc.1.tmp"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.Remove("e"); err != nil {
		t.Fatal(err)
	}
	if err := b.Save(t.Context(), "a", []byte("data of a")); err != nil {
		t.Fatal(err)
	}
	if err := b.Keep([]string{"a"}); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 || string(b.Load("a")) != "data of a" {
		t.Errorf("after Keep: %v, want a's file alone", ents)
	}
}

// snapFiles are the snapshot files in dir.
func snapFiles(t *testing.T, dir string) []string { return glob(t, dir, "*.snap") }

func glob(t *testing.T, dir, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
