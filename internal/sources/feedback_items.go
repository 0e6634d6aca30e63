package sources

import (
	"context"
	"fmt"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// FeedbackItemsSnapshot counts the feedback items created in the window by
// source and triage status, as of the walk.
type FeedbackItemsSnapshot struct {
	meta Meta
	// counts by source, then status: every documented pair, and any other
	// value the API sent.
	counts []sourceStatusCount
	// oldestPending is the creation time of the oldest pending item; zero
	// when none is pending.
	oldestPending time.Time
	// folded counts the sources and statuses summed under "other".
	folded []Folded
}

type sourceStatusCount struct {
	source, status string
	value          float64
}

// Meta implements Snapshot.
func (s *FeedbackItemsSnapshot) Meta() Meta { return s.meta }

func feedbackItemsEmit(fn func(s *FeedbackItemsSnapshot, project, window string, emit Emit)) func(Snapshot, string, string, Emit) {
	return func(snap Snapshot, project, window string, emit Emit) {
		if s, ok := snap.(*FeedbackItemsSnapshot); ok {
			fn(s, project, window, emit)
		}
	}
}

// NameFeedbackItems is the feedback items source: triage states, /feedback.
const NameFeedbackItems = "feedback_items"

var _ = register(&Def{
	Order:     40,
	Weight:    3,
	Name:      NameFeedbackItems,
	Endpoints: []string{apiclient.EndpointFeedback},
	Paging:    PagingCursor,
	Families: []*Family{
		family("mintlify_feedback_items",
			"Feedback items created in the window, by source and by triage status as of the last refresh.",
			familyFlags{}, feedbackItemsEmit(func(s *FeedbackItemsSnapshot, project, window string, emit Emit) {
				for _, c := range s.counts {
					emit(c.value, project, window, c.source, c.status)
				}
			}), "source", "status"),
		family("mintlify_feedback_oldest_pending_age_seconds",
			"Age of the oldest feedback item still pending triage at the last refresh, 0 if none.",
			familyFlags{perProject: true}, feedbackItemsEmit(func(s *FeedbackItemsSnapshot, project, _ string, emit Emit) {
				age := 0.0
				if !s.oldestPending.IsZero() {
					age = max(s.meta.At.Sub(s.oldestPending).Seconds(), 0)
				}
				emit(age, project)
			})),
	},
	make: func(def *Def, cfg Config) (Source, error) {
		return &feedbackItemsSource{base: newBase(def, func(Query) int { return 1 }), cfg: cfg}, nil
	},
})

// feedbackItemsSource walks every item of the window on each refresh:
// statuses change without a modification time, so no item can be skipped.
type feedbackItemsSource struct {
	base
	cfg Config
}

func (s *feedbackItemsSource) Walk(ctx context.Context, q Query) (Snapshot, error) {
	if err := checkRange(s.Name(), q); err != nil {
		return nil, err
	}
	res, err := s.cfg.Client.AllFeedback(ctx, q.Project, apiclient.DateRange{DateFrom: q.DateFrom, DateTo: q.DateTo}, apiclient.MaxFeedbackLimit, s.cfg.MaxPages)
	if err != nil {
		return nil, err
	}
	byPair := map[[2]string]int64{}
	snap := &FeedbackItemsSnapshot{meta: Meta{At: s.cfg.now(), DateFrom: q.DateFrom, DateTo: q.DateTo, Requests: res.Requests, Skipped: res.Skipped.Total()}}
	for _, it := range res.Items {
		byPair[[2]string{s.cfg.label(it.Source), s.cfg.label(it.Status)}]++
		if it.Status == apiclient.FeedbackStatusPending && (snap.oldestPending.IsZero() || it.CreatedAt.Before(snap.oldestPending)) {
			snap.oldestPending = it.CreatedAt
		}
	}
	snap.counts, snap.folded = foldFeedbackItems(byPair)
	s.learn(q, res.Requests)
	return snap, nil
}

// kindFeedbackItems is the wire kind of FeedbackItemsSnapshot.
var kindFeedbackItems = wireKind("feedback_items", decodeData[wireFeedbackItems])

func (v *FeedbackItemsSnapshot) toWire() (string, wireData) {
	if v == nil {
		return "", nil
	}
	w := &wireFeedbackItems{Meta: metaToWire(v.meta), Counts: make([]wireSourceStatus, len(v.counts))}
	for i, c := range v.counts {
		w.Counts[i] = wireSourceStatus{Source: c.source, Status: c.status, Value: c.value}
	}
	// Zero means none pending (the age family then reads 0): written as
	// null rather than as the year 1.
	if !v.oldestPending.IsZero() {
		t := v.oldestPending.UTC()
		w.OldestPending = &t
	}
	w.Folded = foldedToWire(v.folded)
	return kindFeedbackItems, w
}

// wireFeedbackItems is a FeedbackItemsSnapshot.
type wireFeedbackItems struct {
	Meta   wireMeta           `json:"meta"`
	Counts []wireSourceStatus `json:"counts"`
	// OldestPending is null when no item is pending.
	OldestPending *time.Time   `json:"oldestPending"`
	Folded        []wireFolded `json:"folded"`
}

type wireSourceStatus struct {
	Source string  `json:"source"`
	Status string  `json:"status"`
	Value  float64 `json:"value"`
}

func (w *wireFeedbackItems) validate() error {
	if err := w.Meta.validate(0); err != nil {
		return err
	}
	seen := make(uniqueLabels, len(w.Counts))
	for i, c := range w.Counts {
		if err := seen.add("count", i, c.Source, c.Status); err != nil {
			return err
		}
		if err := checkValues(c.Value); err != nil {
			return fmt.Errorf("count %d: %w", i+1, err)
		}
	}
	if w.OldestPending != nil {
		// The zero time would read as "none pending" once decoded: one
		// meaning, one spelling (null).
		if err := checkTime("oldestPending", *w.OldestPending); err != nil {
			return err
		}
	}
	return validateFolded(w.Folded)
}

func (w *wireFeedbackItems) snapshot() Snapshot {
	s := &FeedbackItemsSnapshot{meta: w.Meta.meta(), counts: make([]sourceStatusCount, len(w.Counts))}
	for i, c := range w.Counts {
		s.counts[i] = sourceStatusCount{source: c.Source, status: c.Status, value: c.Value}
	}
	if w.OldestPending != nil {
		s.oldestPending = w.OldestPending.UTC()
	}
	s.folded = foldedFromWire(w.Folded)
	return s
}
