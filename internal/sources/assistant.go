package sources

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/statedir"
)

// Defaults of the assistant source.
const (
	DefaultTopCategories = 10
	// DefaultAssistantOverlap re-reads the last quarter of an hour before
	// the newest conversation seen: conversations that reach the API that
	// late are still counted, once.
	DefaultAssistantOverlap = 15 * time.Minute
)

// Uncategorized is the category label of conversations the API did not
// categorise (queryCategory null).
const Uncategorized = "uncategorized"

// keepDays is how many days of counts the state keeps: a year of windows
// and a little more.
const keepDays = 400

// AssistantSnapshot is a window of conversations, derived from the counts
// per day, with the caller stats the API gives per window.
type AssistantSnapshot struct {
	meta     Meta
	callers  []labelCount
	combined float64
	// conversations are the distinct conversations of each day, summed.
	conversations float64
	resolution    []labelCount
	responseType  []labelCount
	// categories are the largest ones; otherCategories counts the rest.
	categories      []labelCount
	otherCategories float64
	// folded counts the values of each label summed under "other".
	folded []Folded
}

// Meta implements Snapshot.
func (s *AssistantSnapshot) Meta() Meta { return s.meta }

func assistantEmit(pick func(s *AssistantSnapshot) []labelCount) func(Snapshot, string, string, Emit) {
	return func(snap Snapshot, project, window string, emit Emit) {
		if s, ok := snap.(*AssistantSnapshot); ok {
			for _, c := range pick(s) {
				emit(c.value, project, window, c.label)
			}
		}
	}
}

func assistantEmitOne(pick func(s *AssistantSnapshot) float64) func(Snapshot, string, string, Emit) {
	return func(snap Snapshot, project, window string, emit Emit) {
		if s, ok := snap.(*AssistantSnapshot); ok {
			emit(pick(s), project, window)
		}
	}
}

// NameAssistant is the assistant source: conversations, /assistant.
const NameAssistant = "assistant"

// keyTopCategories is how many query categories are exported
// (0 = DefaultTopCategories; negative = none).
const keyTopCategories = "top_categories"

var _ = register(&Def{
	Order:     60,
	Weight:    2,
	Name:      NameAssistant,
	Endpoints: []string{apiclient.EndpointAssistant, apiclient.EndpointAssistantCallerStats},
	Paging:    PagingCursor,
	Settings:  []Setting{{Key: keyTopCategories, Min: -1, Max: 100, Backfill: true}},
	Families: []*Family{
		family("mintlify_assistant_turns_by_caller", "Turns (questions) asked of the AI assistant in the window, by caller (web, api, other), from the API's caller stats.",
			familyFlags{additive: true}, assistantEmit(func(s *AssistantSnapshot) []labelCount { return s.callers }), "caller"),
		family("mintlify_assistant_turns_combined", "The Mintlify API's own total of turns (questions) asked of the AI assistant in the window (caller stats).",
			familyFlags{additive: true, totals: true}, assistantEmitOne(func(s *AssistantSnapshot) float64 { return s.combined })),
		family("mintlify_assistant_conversations", "Distinct conversations (thread ids) with the AI assistant with a turn in the window, counted once per day they had one.",
			familyFlags{additive: true}, assistantEmitOne(func(s *AssistantSnapshot) float64 { return s.conversations })),
		family("mintlify_assistant_turns_by_resolution", "Turns of conversations with the AI assistant in the window by resolution status (answered, unanswered).",
			familyFlags{additive: true}, assistantEmit(func(s *AssistantSnapshot) []labelCount { return s.resolution }), "resolution"),
		family("mintlify_assistant_turns_by_response_type", "Turns of conversations with the AI assistant in the window by response type (answer, clarifying_question).",
			familyFlags{additive: true}, assistantEmit(func(s *AssistantSnapshot) []labelCount { return s.responseType }), "response_type"),
		family("mintlify_assistant_turns_by_category", "Turns of conversations with the AI assistant in the window by query category, for the largest categories.",
			familyFlags{}, assistantEmit(func(s *AssistantSnapshot) []labelCount { return s.categories }), "category"),
		family("mintlify_assistant_turns_other_categories", "Assistant turns in the window whose category is not among the exported largest ones.",
			familyFlags{}, assistantEmitOne(func(s *AssistantSnapshot) float64 { return s.otherCategories })),
	},
	make: func(def *Def, cfg Config) (Source, error) {
		if cfg.AssistantPageSize == 0 {
			cfg.AssistantPageSize = apiclient.MaxAssistantLimit
		}
		if cfg.AssistantPageSize < 1 || cfg.AssistantPageSize > apiclient.MaxAssistantLimit {
			return nil, fmt.Errorf("assistant: page size %d outside 1..%d", cfg.AssistantPageSize, apiclient.MaxAssistantLimit)
		}
		if cfg.AssistantOverlap == 0 {
			cfg.AssistantOverlap = DefaultAssistantOverlap
		}
		if cfg.AssistantOverlap < 0 {
			return nil, fmt.Errorf("assistant: overlap %s must not be negative", cfg.AssistantOverlap)
		}
		topCategories := cmp.Or(cfg.Settings[keyTopCategories], DefaultTopCategories)
		if cfg.Logger == nil {
			cfg.Logger = log.NewNopLogger()
		}
		// Before the first walk: one read of new conversations and one of
		// caller stats; the first walk of a window costs more (all of it).
		return &assistantSource{base: newBase(def, func(Query) int { return 2 }), cfg: cfg, topCategories: topCategories, projects: map[string]*projectConversations{},
			writes: statedir.Writes{Timeout: stateWriteTimeout}, syncFile: (*os.File).Sync}, nil
	},
})

// assistantSource reads conversations incrementally: only those after the
// newest seen (less an overlap), counted per local day and kept on disk, so
// that a window of any length costs the new conversations and one request
// of caller stats.
type assistantSource struct {
	base
	cfg Config
	// topCategories is how many query categories are exported (negative:
	// none).
	topCategories int

	mu       sync.Mutex
	projects map[string]*projectConversations
	// writes bounds the state file writes: a frozen disk fails the walk
	// within stateWriteTimeout instead of holding it (and shutdown) open.
	writes statedir.Writes
	// syncFile is (*os.File).Sync; tests replace it to freeze the disk.
	syncFile func(*os.File) error
}

// stateWriteTimeout bounds a write of the assistant's state, as the agent
// state file's and the ledger's.
const stateWriteTimeout = 5 * time.Second

// projectConversations serialises the walks of one project: they share its
// state.
type projectConversations struct {
	mu    sync.Mutex
	state *assistantState // nil until loaded
}

func (s *assistantSource) project(id string) *projectConversations {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[id]
	if p == nil {
		p = &projectConversations{}
		s.projects[id] = p
	}
	return p
}

func (s *assistantSource) Walk(ctx context.Context, q Query) (Snapshot, error) {
	if err := checkRange(s.Name(), q); err != nil {
		return nil, err
	}
	p := s.project(q.Project)
	p.mu.Lock()
	defer p.mu.Unlock()
	loc := s.cfg.location()
	if p.state == nil {
		st, err := loadState(s.cfg.StateDir, q.Project, loc.String())
		if err != nil {
			level.Warn(s.cfg.Logger).Log("msg", "assistant state unreadable: reading the conversations again", "project", q.Project, "err", err)
		}
		p.state = st
	}
	requests, skipped, err := s.read(ctx, p.state, q)
	if err != nil {
		return nil, err
	}
	p.state.bound(s.cfg.label, s.topCategories)
	if err := p.state.save(s.cfg.StateDir, &s.writes, s.syncFile); err != nil {
		// The counts in memory are right: the next walk saves them again.
		return nil, fmt.Errorf("assistant for project %s: %w", q.Project, err)
	}
	stats, err := s.cfg.Client.AssistantCallerStats(ctx, q.Project, apiclient.DateRange{DateFrom: q.DateFrom, DateTo: q.DateTo})
	if err != nil {
		return nil, err
	}
	requests++
	snap := s.snapshot(p.state, q, stats, requests, skipped)
	s.learn(q, requests)
	return snap, nil
}

// read brings the state up to date for q and returns the requests sent
// and the rows skipped: days before the state's first day are read once
// (the window grew), then the turns since the watermark.
func (s *assistantSource) read(ctx context.Context, st *assistantState, q Query) (requests, skipped int, err error) {
	f := &conversationFetch{s: s, ctx: ctx, project: q.Project}
	if st.From == "" || q.DateFrom < st.From {
		if fresh, err := s.readEarlierDays(f, st, q); err != nil || fresh {
			return f.requests, f.skipped, err
		}
	}
	// The turns since the watermark, less the overlap: those seen before
	// are in Recent, and anything older was counted already (or came too
	// late to count).
	since := st.Watermark.Add(-s.cfg.AssistantOverlap)
	if !analytics.DayStart(mustDate(q.DateTo), s.cfg.location()).After(since) {
		return f.requests, f.skipped, nil // a past window: its days are all counted
	}
	if err := s.readSince(f, st, q, since); err != nil {
		return f.requests, f.skipped, err
	}
	s.dropOldDays(st)
	return f.requests, f.skipped, nil
}

// conversationFetch reads the conversations of one project and counts the
// requests sent, whether the read succeeds or not.
type conversationFetch struct {
	s        *assistantSource
	ctx      context.Context
	project  string
	requests int
	// skipped counts the rows the API sent that could not be read.
	skipped int
}

func (f *conversationFetch) fetch(r apiclient.DateRange) ([]apiclient.Turn, error) {
	cfg := &f.s.cfg
	res, err := cfg.Client.AllTurns(f.ctx, f.project, r, cfg.AssistantPageSize, cfg.MaxPages)
	if res != nil {
		f.requests += res.Requests
		f.skipped += res.Skipped.Total()
	}
	if err != nil {
		return nil, err
	}
	return res.Turns, nil
}

// dayOf is the day of t in the configured time zone.
func (s *assistantSource) dayOf(t time.Time) string {
	return t.In(s.cfg.location()).Format(analytics.DateLayout)
}

// readEarlierDays reads whole the days of q before the state's first day:
// all of q's window when nothing was read yet (fresh: the state is then
// up to date), or the days the window grew by.
func (s *assistantSource) readEarlierDays(f *conversationFetch, st *assistantState, q Query) (fresh bool, err error) {
	// Nothing read yet, or days before the first one read: read those days
	// whole. A fresh state reads up to the window's end.
	to := st.From
	if to == "" {
		to = q.DateTo
	}
	convs, err := f.fetch(apiclient.DateRange{DateFrom: q.DateFrom, DateTo: to})
	if err != nil {
		return false, err
	}
	fresh = st.From == ""
	tc := st.newTurnCounter(s.dayOf)
	for _, c := range convs {
		if d := s.dayOf(c.Timestamp); d >= q.DateFrom && (fresh || d < st.From) {
			tc.count(d, c)
			if fresh {
				st.seen(c)
			}
		}
	}
	if fresh {
		if st.Watermark.IsZero() {
			st.Watermark = analytics.DayStart(mustDate(q.DateFrom), s.cfg.location())
		}
		st.From = q.DateFrom
		st.prune(s.cfg.AssistantOverlap)
		return true, nil
	}
	st.From = q.DateFrom
	return false, nil
}

// readSince counts the conversations of q's window since the given time
// that were not counted before.
func (s *assistantSource) readSince(f *conversationFetch, st *assistantState, q Query, since time.Time) error {
	convs, err := f.fetch(apiclient.DateRange{DateFrom: since.UTC().Format(time.RFC3339), DateTo: q.DateTo})
	if err != nil {
		return err
	}
	tc := st.newTurnCounter(s.dayOf)
	for _, c := range convs {
		d := s.dayOf(c.Timestamp)
		if st.recent(c) || d < st.From || c.Timestamp.Before(since) {
			continue
		}
		tc.count(d, c)
		st.seen(c)
	}
	st.prune(s.cfg.AssistantOverlap)
	return nil
}

// dropOldDays drops the days beyond keepDays: the first day read moves
// with them.
func (s *assistantSource) dropOldDays(st *assistantState) {
	first := s.cfg.now().In(s.cfg.location()).AddDate(0, 0, -keepDays).Format(analytics.DateLayout)
	if st.From >= first {
		return
	}
	st.From = first
	for d := range st.Days {
		if d < first {
			delete(st.Days, d)
		}
	}
}

func mustDate(s string) time.Time {
	t, _ := time.Parse(analytics.DateLayout, s) // checked by checkRange
	return t
}

// turnCounter counts the turns of one read into their days, and each
// conversation once per day: a conversation is known to a day when a turn
// of it on that day was counted in this read, or is still in Recent (a
// turn within the overlap of the last read). A conversation that resumes
// on the same day after a pause longer than that is counted again: the
// state keeps no list of every conversation of a day (docs/sources.md).
type turnCounter struct {
	st *assistantState
	// known holds day + "\x00" + id of the conversations counted.
	known map[string]struct{}
}

func (st *assistantState) newTurnCounter(dayOf func(time.Time) string) *turnCounter {
	tc := &turnCounter{st: st, known: make(map[string]struct{}, len(st.Recent))}
	for id, times := range st.Recent {
		for _, t := range times {
			tc.known[dayOf(t)+"\x00"+id] = struct{}{}
		}
	}
	return tc
}

// count adds a turn to its day, and its conversation when the day does
// not know it yet.
func (tc *turnCounter) count(day string, c apiclient.Turn) {
	d := tc.st.day(day)
	d.Total++
	if k := day + "\x00" + c.ID; !has(tc.known, k) {
		tc.known[k] = struct{}{}
		d.Conversations++
	}
	d.Resolution[c.ResolutionStatus]++
	d.ResponseType[c.ResponseType]++
	cat := Uncategorized
	if c.QueryCategory != nil {
		cat = *c.QueryCategory
	}
	d.Category[cat]++
}

func has(m map[string]struct{}, k string) bool {
	_, ok := m[k]
	return ok
}

// recent reports whether the turn was counted by an earlier read.
func (st *assistantState) recent(c apiclient.Turn) bool {
	for _, t := range st.Recent[c.ID] {
		if t.Equal(c.Timestamp) {
			return true
		}
	}
	return false
}

// seen moves the watermark and remembers the turn for the overlap.
func (st *assistantState) seen(c apiclient.Turn) {
	if c.Timestamp.After(st.Watermark) {
		st.Watermark = c.Timestamp
	}
	if !st.recent(c) {
		st.Recent[c.ID] = append(st.Recent[c.ID], c.Timestamp)
	}
}

// prune forgets the turns the next read cannot return again.
func (st *assistantState) prune(overlap time.Duration) {
	since := st.Watermark.Add(-overlap)
	for id, times := range st.Recent {
		kept := slices.DeleteFunc(times, func(t time.Time) bool { return t.Before(since) })
		if len(kept) == 0 {
			delete(st.Recent, id)
			continue
		}
		st.Recent[id] = kept
	}
}

// snapshot derives the window from the days.
func (s *assistantSource) snapshot(st *assistantState, q Query, stats *apiclient.CallerStats, requests, skipped int) *AssistantSnapshot {
	resolution, responseType, category := map[string]int64{}, map[string]int64{}, map[string]int64{}
	var otherCategories, conversations float64
	dayFolded := map[string]int{}
	for day, c := range st.Days {
		if day < q.DateFrom || day >= q.DateTo {
			continue
		}
		for k, v := range c.Resolution {
			resolution[k] += v
		}
		for k, v := range c.ResponseType {
			responseType[k] += v
		}
		for k, v := range c.Category {
			category[k] += v
		}
		otherCategories += float64(c.OtherCategories)
		conversations += float64(c.Conversations)
		for k, v := range c.Folded {
			dayFolded[k] += int(v)
		}
	}
	snap := &AssistantSnapshot{
		meta: Meta{At: s.cfg.now(), DateFrom: q.DateFrom, DateTo: q.DateTo, Requests: requests,
			Skipped: skipped + stats.Skipped.Total(), TotalsSkipped: stats.TotalSkipped},
		combined:      float64(stats.Total),
		conversations: conversations,
	}
	var fc, fr, ft, fcat int
	snap.callers, fc = foldByLabel(stats.ByCaller, apiclient.Callers, s.cfg.label)
	snap.resolution, fr = foldByLabel(resolution, apiclient.Resolutions, s.cfg.label)
	snap.responseType, ft = foldByLabel(responseType, apiclient.ResponseTypes, s.cfg.label)
	snap.categories, snap.otherCategories, fcat = topCategories(category, s.topCategories, s.cfg.label)
	snap.otherCategories += otherCategories
	snap.folded = []Folded{{"caller", fc}, {"resolution", fr + dayFolded["resolution"]},
		{"response_type", ft + dayFolded["response_type"]}, {"category", fcat + dayFolded["category"]}}
	return snap
}

// kindAssistant is the wire kind of AssistantSnapshot.
var kindAssistant = wireKind("assistant", decodeData[wireAssistant])

func (v *AssistantSnapshot) toWire() (string, wireData) {
	if v == nil {
		return "", nil
	}
	return kindAssistant, &wireAssistant{
		Meta:            metaToWire(v.meta),
		Callers:         labelCountsToWire(v.callers),
		Combined:        v.combined,
		Conversations:   v.conversations,
		Resolution:      labelCountsToWire(v.resolution),
		ResponseType:    labelCountsToWire(v.responseType),
		Categories:      labelCountsToWire(v.categories),
		OtherCategories: v.otherCategories,
		Folded:          foldedToWire(v.folded),
	}
}

// wireAssistant is an AssistantSnapshot.
type wireAssistant struct {
	Meta            wireMeta         `json:"meta"`
	Callers         []wireLabelCount `json:"callers"`
	Combined        float64          `json:"combined"`
	Conversations   float64          `json:"conversations"`
	Resolution      []wireLabelCount `json:"resolution"`
	ResponseType    []wireLabelCount `json:"responseType"`
	Categories      []wireLabelCount `json:"categories"`
	OtherCategories float64          `json:"otherCategories"`
	Folded          []wireFolded     `json:"folded"`
}

func (w *wireAssistant) validate() error {
	if err := w.Meta.validate(0); err != nil {
		return err
	}
	for _, l := range [...]struct {
		what string
		rows []wireLabelCount
	}{{"caller", w.Callers}, {"resolution", w.Resolution}, {"response type", w.ResponseType}, {"category", w.Categories}} {
		seen := make(uniqueLabels, len(l.rows))
		for i, c := range l.rows {
			if err := seen.add(l.what, i, c.Label); err != nil {
				return err
			}
			if err := checkValues(c.Value); err != nil {
				return fmt.Errorf("%s %d: %w", l.what, i+1, err)
			}
		}
	}
	if err := checkValues(w.Combined, w.OtherCategories, w.Conversations); err != nil {
		return fmt.Errorf("combined, other categories or conversations: %w", err)
	}
	return validateFolded(w.Folded)
}

func (w *wireAssistant) snapshot() Snapshot {
	return &AssistantSnapshot{
		meta:            w.Meta.meta(),
		callers:         labelCountsFromWire(w.Callers),
		combined:        w.Combined,
		conversations:   w.Conversations,
		resolution:      labelCountsFromWire(w.Resolution),
		responseType:    labelCountsFromWire(w.ResponseType),
		categories:      labelCountsFromWire(w.Categories),
		otherCategories: w.OtherCategories,
		folded:          foldedFromWire(w.Folded),
	}
}
