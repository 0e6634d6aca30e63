// Package sources holds one file per analytics source: how to walk its
// endpoint for a project and date range, what a walk costs in requests, and
// how the resulting snapshot becomes samples. Snapshots are immutable and
// compact: a family emits its samples from a snapshot on demand, so that
// neither the live collector nor a backfill keeps label slices per series.
// Adding a source is one file here that declares and registers its Def
// (docs/development.md, Adding a source).
package sources

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
)

// Query is what one walk reads: a project and a date range.
type Query struct {
	Project string
	// DateFrom and DateTo are YYYY-MM-DD; DateTo is exclusive.
	DateFrom, DateTo string
	// TotalsOnly asks for the site-wide families alone, where the source
	// can read them cheaper than a full walk (see Source.TotalsOnly).
	TotalsOnly bool
}

// Meta is what every snapshot carries.
type Meta struct {
	// At is when the walk finished.
	At time.Time
	// DateFrom and DateTo are the API's dates (DateTo exclusive).
	DateFrom, DateTo string
	// Requests is how many API requests the walk took, retries excluded.
	Requests int
	// TotalsOnly: the snapshot holds no per-path or per-query series.
	TotalsOnly bool
	// Skipped is how many rows of the API's answers could not be read and
	// were skipped (apiclient.Skips): the walk and its other rows stand.
	Skipped int
	// TotalsSkipped: the API's own site-wide totals were none an answer
	// can mean; the families of them (Family.Totals) emit nothing.
	TotalsSkipped bool
}

// Snapshot is the result of one walk, reduced to what is exported. It is
// immutable once returned.
type Snapshot interface {
	Meta() Meta
}

// Emit receives one sample: its value and its label values in the order of
// the family's Labels.
type Emit func(value float64, labelValues ...string)

// Family is one metric family of a source.
type Family struct {
	Name string
	// Help is one sentence (details are in README).
	Help string
	// Labels are every label name, in the order Emit passes values:
	// project, then window (unless PerProject), then the family's own.
	Labels []string
	// Pages: one series per path or query; a TotalsOnly snapshot has none.
	Pages bool
	// PerProject: no window label. The family describes the project, not a
	// window: emit it once per project, from the snapshot of its widest
	// window (the one with the earliest DateFrom).
	PerProject bool
	// Additive: the family's counts add up across days, so a window may be
	// derived from daily counts (views and conversations are events; unique
	// visitors, top-N lists and triage states are not).
	Additive bool
	// Totals: the family is the API's own site-wide totals, which a walk
	// may have skipped (Meta.TotalsSkipped).
	Totals bool

	emit func(s Snapshot, project, window string, emit Emit)
	desc *prometheus.Desc
}

// Emit calls emit once per sample of the family in s, label values in the
// order of Labels. A snapshot of another source emits nothing.
func (f *Family) Emit(s Snapshot, project, window string, emit Emit) {
	if s == nil || (f.Totals && s.Meta().TotalsSkipped) {
		return
	}
	f.emit(s, project, window, emit)
}

// Desc is the family's descriptor, made once.
func (f *Family) Desc() *prometheus.Desc { return f.desc }

// family builds a Family; extra are its labels beyond project and window.
func family(name, help string, flags familyFlags, emit func(s Snapshot, project, window string, emit Emit), extra ...string) *Family {
	labels := []string{"project"}
	if !flags.perProject {
		labels = append(labels, "window")
	}
	labels = append(labels, extra...)
	return &Family{
		Name: name, Help: help, Labels: labels,
		Pages: flags.pages, PerProject: flags.perProject, Additive: flags.additive, Totals: flags.totals,
		emit: emit, desc: prometheus.NewDesc(name, help, labels, nil),
	}
}

type familyFlags struct{ pages, perProject, additive, totals bool }

// Source is one analytics source. Implementations are safe for concurrent
// walks.
type Source interface {
	// Name is the source's name in configuration and in the source label.
	Name() string
	// Families are the source's data families, site-wide ones first.
	Families() []*Family
	// Additive reports whether the source's site-wide counts add up across
	// days (some family is Additive): the backfill reads only such sources
	// per past day.
	Additive() bool
	// TotalsOnly reports whether a Query with TotalsOnly costs less than a
	// full walk (one request, limit=1), so that site totals can be
	// refreshed more often than page walks.
	TotalsOnly() bool
	// Estimate is the requests a walk of q is expected to take: the cost
	// of the last walk of the same kind for the project, or a guess before
	// the first.
	Estimate(q Query) int
	// Walk reads the API and returns a snapshot, or an error of that walk
	// (never a partial snapshot). Its requests are in Meta().Requests.
	Walk(ctx context.Context, q Query) (Snapshot, error)
}

// Config is what the sources need; each reads its own fields.
type Config struct {
	// Client sends every request; it pays the analytics budget.
	Client *apiclient.Client
	// Location is the time zone of the API's days (nil = UTC).
	Location *time.Location
	// Now is the clock (nil = time.Now).
	Now func() time.Time
	// Logger may be nil. Nothing from the API's free text is ever logged.
	Logger log.Logger

	// PageSize of visitors and views walks (0 = apiclient.MaxPageSize).
	PageSize int
	// MaxPages caps a walk (0 = the apiclient defaults).
	MaxPages int
	// Paths decides which paths of visitors and views are exported.
	Paths analytics.PathPolicy

	// Settings are the source's own settings by key (Def.Settings); a key
	// left out is 0, the source's default.
	Settings map[string]int

	// StateDir keeps the assistant's daily counts across restarts (empty:
	// kept in memory only, read again after a restart).
	StateDir      string
	TopCategories int
	// AssistantOverlap is how far before the newest conversation seen an
	// incremental read starts again, for conversations that reach the API
	// late (0 = DefaultAssistantOverlap).
	AssistantOverlap time.Duration
	// AssistantPageSize is the page of /assistant, 1..1000 (0 = 1000).
	AssistantPageSize int
}

func (c Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// label makes a string from the API a label value: secrets masked by the
// path policy's Redact (the process's redactor: a feedback page's path, a
// search query or a category that echoes an API key, whole, cut or
// escaped, never becomes a label), then bounded.Label (valid UTF-8, at most
// 256 bytes, a longer value cut with a hash suffix so that distinct values
// stay distinct). Masking comes first so that the cut cannot leave a longer
// piece of a key.
func (c Config) label(s string) string {
	if c.Paths.Redact != nil {
		s = c.Paths.Redact(strings.ToValidUTF8(s, "\uFFFD"))
	}
	return bounded.Label(s)
}

func (c Config) location() *time.Location {
	if c.Location != nil {
		return c.Location
	}
	return time.UTC
}

// base implements the static part of Source from its Def, and remembers
// what walks cost.
type base struct {
	def   *Def
	guess func(q Query) int

	mu   sync.Mutex
	cost map[costKey]int
}

type costKey struct {
	project    string
	days       int
	totalsOnly bool
}

func newBase(def *Def, guess func(Query) int) base {
	return base{def: def, guess: guess, cost: map[costKey]int{}}
}

func (b *base) Name() string        { return b.def.Name }
func (b *base) Families() []*Family { return b.def.Families }
func (b *base) TotalsOnly() bool    { return b.def.TotalsOnly }
func (b *base) Additive() bool {
	return slices.ContainsFunc(b.def.Families, func(f *Family) bool { return f.Additive })
}

func keyOf(q Query) costKey {
	days := 0
	from, err1 := time.Parse(analytics.DateLayout, q.DateFrom)
	to, err2 := time.Parse(analytics.DateLayout, q.DateTo)
	if err1 == nil && err2 == nil {
		days = int(to.Sub(from).Hours()+12) / 24
	}
	return costKey{q.Project, days, q.TotalsOnly}
}

// Estimate returns the last cost of a walk of the same project, range
// length and kind, or the source's guess.
func (b *base) Estimate(q Query) int {
	b.mu.Lock()
	n, ok := b.cost[keyOf(q)]
	b.mu.Unlock()
	if ok {
		return n
	}
	return b.guess(q)
}

// learn records what a walk cost.
func (b *base) learn(q Query, requests int) {
	b.mu.Lock()
	b.cost[keyOf(q)] = requests
	b.mu.Unlock()
}

// checkRange refuses a query without a valid date range.
func checkRange(name string, q Query) error {
	if q.Project == "" {
		return fmt.Errorf("%s: empty project", name)
	}
	from, err1 := time.Parse(analytics.DateLayout, q.DateFrom)
	to, err2 := time.Parse(analytics.DateLayout, q.DateTo)
	if err1 != nil || err2 != nil || !to.After(from) {
		return fmt.Errorf("%s for project %s: invalid date range %q..%q: want YYYY-MM-DD with dateFrom < dateTo", name, q.Project, q.DateFrom, q.DateTo)
	}
	return nil
}
