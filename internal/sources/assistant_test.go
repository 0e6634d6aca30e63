package sources_test

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/statedir"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

const pageSize = 4

// checkAssistant compares every exported value of a window with the fake.
func checkAssistant(t *testing.T, e *env, src sources.Source, snap sources.Snapshot, q sources.Query, window string) {
	t.Helper()
	from, to := e.bounds(q)
	now := e.clock.Now()
	convs := e.fake.Conversations(project, from, to, now)
	byCaller, total := e.fake.CallerStats(project, from, to, now)
	res, types, cats := map[string]float64{}, map[string]float64{}, map[string]float64{}
	loc := e.cfg.Location
	if loc == nil {
		loc = time.UTC
	}
	// Conversations: distinct ids on each day they had a turn. The fake's
	// turns of one conversation come closer together than any overlap the
	// tests set, so the count is exact here.
	days := map[string]bool{}
	turnsOf := map[string]int{}
	for _, c := range convs {
		days[c.Timestamp.In(loc).Format("2006-01-02")+" "+c.ID] = true
		turnsOf[c.ID]++
		res[c.Resolution]++
		types[c.ResponseType]++
		cat := sources.Uncategorized
		if c.Category != nil {
			cat = *c.Category
		}
		cats[cat]++
	}
	got := collect(t, src, snap, window)
	got.want(t, "mintlify_assistant_turns_combined", float64(total), project, window)
	got.want(t, "mintlify_assistant_conversations", float64(len(days)), project, window)
	if len(turnsOf) == len(convs) {
		t.Error("no conversation of several turns in the fake's window")
	}
	for _, c := range apiclient.Callers {
		got.want(t, "mintlify_assistant_turns_by_caller", float64(byCaller[c]), project, window, c)
	}
	for _, r := range apiclient.Resolutions {
		got.want(t, "mintlify_assistant_turns_by_resolution", res[r], project, window, r)
	}
	for _, r := range apiclient.ResponseTypes {
		got.want(t, "mintlify_assistant_turns_by_response_type", types[r], project, window, r)
	}
	if len(cats) != len(got["mintlify_assistant_turns_by_category"]) {
		t.Errorf("%d categories exported, the API has %d", len(got["mintlify_assistant_turns_by_category"]), len(cats))
	}
	for c, n := range cats {
		got.want(t, "mintlify_assistant_turns_by_category", n, project, window, c)
	}
	if res["unanswered"] == 0 {
		t.Error("no unanswered conversation in the fake")
	}
}

// TestAssistantIncremental: the first walk reads the window; later walks
// read only the conversations since the newest seen (less the overlap),
// also after a restart; the counts always equal the API's.
func TestAssistantIncremental(t *testing.T) {
	t.Parallel()
	const overlap = 10 * time.Minute
	e := start(t, fakeapi.Options{Paths: 50}, func(c *sources.Config) { c.AssistantPageSize = pageSize; c.AssistantOverlap = overlap })
	src := e.source(sources.NameAssistant)
	q := e.window(7)
	from, to := e.bounds(q)

	requests := func() int64 {
		return e.fake.Requests(fakeapi.Assistant) + e.fake.Requests(fakeapi.AssistantCallerStats)
	}
	first := e.walk(src, q)
	all := e.fake.Conversations(project, from, to, e.clock.Now())
	want := ceilDiv(len(all), pageSize) + 1
	if first.Meta().Requests != want || requests() != int64(want) {
		t.Fatalf("first walk of %d conversations: %d requests (fake saw %d), want %d", len(all), first.Meta().Requests, requests(), want)
	}
	checkAssistant(t, e, src, first, q, "7d")

	// Three hours later: the new conversations, and those in the overlap.
	newest := all[len(all)-1].Timestamp
	for _, c := range all {
		if c.Timestamp.After(newest) {
			newest = c.Timestamp
		}
	}
	e.clock.Advance(3 * time.Hour)
	reread := e.fake.Conversations(project, newest.Add(-overlap), to, e.clock.Now())
	fresh := len(e.fake.Conversations(project, newest.Add(time.Nanosecond), to, e.clock.Now()))
	if fresh < pageSize {
		t.Fatalf("only %d new conversations: the test wants more than a page", fresh)
	}
	before := requests()
	second := e.walk(src, q)
	want = ceilDiv(len(reread), pageSize) + 1
	if second.Meta().Requests != want || requests()-before != int64(want) {
		t.Fatalf("second walk after %d new conversations: %d requests, want %d", fresh, second.Meta().Requests, want)
	}
	checkAssistant(t, e, src, second, q, "7d")

	// The 1d window shares the days: one read of nothing new and caller
	// stats.
	day := e.window(1)
	before = requests()
	one := e.walk(src, day)
	if n := requests() - before; n != 2 {
		t.Errorf("1d walk after the 7d one: %d requests, want 2", n)
	}
	checkAssistant(t, e, src, one, day, "1d")

	// A restart: a new source on the same state directory reads nothing
	// again beyond the overlap.
	restarted := e.source(sources.NameAssistant)
	before = requests()
	third := e.walk(restarted, q)
	if n := requests() - before; n != 2 || third.Meta().Requests != 2 {
		t.Errorf("walk after a restart: %d requests, want 2 (the overlap and caller stats)", n)
	}
	checkAssistant(t, e, restarted, third, q, "7d")

	// A longer window reads only its days before the first one read.
	month := e.window(30)
	mFrom, _ := e.bounds(month)
	older := e.fake.Conversations(project, mFrom, from, e.clock.Now())
	before = requests()
	m := e.walk(restarted, month)
	want = ceilDiv(len(older), pageSize) + 1 + 1
	if n := requests() - before; n != int64(want) {
		t.Errorf("30d walk after the 7d ones: %d requests, want %d", n, want)
	}
	checkAssistant(t, e, restarted, m, month, "30d")
}

// TestAssistantStateFile: the state is a small JSON file per project; a
// damaged one is read again from the API, not a failure.
func TestAssistantStateFile(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 50}, nil)
	q := e.window(7)
	e.walk(e.source(sources.NameAssistant), q)
	file := e.cfg.StateDir + "/assistant-" + project + ".json"
	info, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() > 64<<10 {
		t.Errorf("state file of 7 days is %d bytes", info.Size())
	}
	if err := os.WriteFile(file, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := e.source(sources.NameAssistant)
	snap := e.walk(src, q)
	checkAssistant(t, e, src, snap, q, "7d")
	if snap.Meta().Requests < 2 {
		t.Errorf("a damaged state was trusted: %d requests", snap.Meta().Requests)
	}
	// A FIFO in its place is damaged too, at once: not a read that waits
	// for a writer for ever (issue 45).
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(file, 0o600); err != nil {
		t.Fatal(err)
	}
	src = e.source(sources.NameAssistant) // a restart: the state is read
	snap = e.walk(src, q)
	checkAssistant(t, e, src, snap, q, "7d")
	if snap.Meta().Requests < 2 {
		t.Errorf("a FIFO in place of the state: %d requests", snap.Meta().Requests)
	}
}

// TestAssistantUnknownValues: a caller, response type or resolution the
// API adds is exported as it came.
func TestAssistantUnknownValues(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 50}, nil)
	e.fake.SetFault(fakeapi.Assistant, fakeapi.Fault{UnknownEnum: true})
	e.fake.SetFault(fakeapi.AssistantCallerStats, fakeapi.Fault{UnknownEnum: true})
	src := e.source(sources.NameAssistant)
	q := e.window(1)
	got := collect(t, src, e.walk(src, q), "1d")
	got.want(t, "mintlify_assistant_turns_by_caller", 3, project, "1d", fakeapi.UnknownEnumValue)
	got.want(t, "mintlify_assistant_turns_by_resolution", 1, project, "1d", fakeapi.UnknownEnumValue)
	got.want(t, "mintlify_assistant_turns_by_response_type", 1, project, "1d", fakeapi.UnknownEnumValue)
}

// TestAssistantStateOnAFrozenDisk: a state write that hangs (a frozen
// filesystem) fails the walk within its bound instead of holding it, and
// with it the scheduler's shutdown; the next walk fails at once; once the
// disk thaws, walks save again.
func TestAssistantStateOnAFrozenDisk(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 50}, nil)
	src := e.source(sources.NameAssistant)
	q := e.window(1)
	thaw := make(chan struct{})
	var thawOnce sync.Once
	t.Cleanup(func() { thawOnce.Do(func() { close(thaw) }) })
	sources.SetAssistantDisk(src, 20*time.Millisecond, func(f *os.File) error { <-thaw; return f.Sync() })

	var timeout *statedir.TimeoutError
	if _, err := src.Walk(ctx(t), q); !errors.As(err, &timeout) || timeout.Earlier {
		t.Fatalf("walk on a frozen disk = %v, want the write's own timeout", err)
	}
	if _, err := src.Walk(ctx(t), q); !errors.As(err, &timeout) || !timeout.Earlier {
		t.Fatalf("walk behind a blocked write = %v, want a refusal naming the earlier write", err)
	}
	thawOnce.Do(func() { close(thaw) })
	// The blocked write returns once thawed, on its own goroutine: walks
	// are refused as behind it until then.
	var snap sources.Snapshot
	var err error
	testutil.Eventually(t, 0, "a walk after the thaw", func() bool {
		snap, err = src.Walk(ctx(t), q)
		if err != nil && !errors.As(err, &timeout) {
			t.Fatalf("walk after the thaw: %v", err)
		}
		return err == nil
	}, func() string { return fmt.Sprint("last error: ", err) })
	checkAssistant(t, e, src, snap, q, "1d")
}

// The assistant source's families and whether its counts add up across days
// (TestFamiliesAsTheIssueNamesThem, TestRegistry).
var _ = pinSource(sources.NameAssistant, pin{additive: true, families: map[string][]string{
	"mintlify_assistant_turns_by_caller":        {"project", "window", "caller"},
	"mintlify_assistant_turns_combined":         {"project", "window"},
	"mintlify_assistant_conversations":          {"project", "window"},
	"mintlify_assistant_turns_by_resolution":    {"project", "window", "resolution"},
	"mintlify_assistant_turns_by_response_type": {"project", "window", "response_type"},
	"mintlify_assistant_turns_by_category":      {"project", "window", "category"},
	"mintlify_assistant_turns_other_categories": {"project", "window"},
}})
