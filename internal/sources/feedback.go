package sources

import (
	"cmp"
	"context"
	"fmt"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// Label values of the kind label of mintlify_page_feedback.
const (
	KindThumbsUp    = "thumbs_up"
	KindThumbsDown  = "thumbs_down"
	KindCodeSnippet = "code_snippet"
)

// FeedbackSnapshot is the first page of /feedback/by-page.
type FeedbackSnapshot struct {
	meta  Meta
	pages []pageFeedback
	// truncated: the API had more pages than the list holds.
	truncated bool
}

type pageFeedback struct {
	path                  string
	up, down, code, total float64
}

// Meta implements Snapshot.
func (s *FeedbackSnapshot) Meta() Meta { return s.meta }

func feedbackEmit(fn func(s *FeedbackSnapshot, project, window string, emit Emit)) func(Snapshot, string, string, Emit) {
	return func(snap Snapshot, project, window string, emit Emit) {
		if s, ok := snap.(*FeedbackSnapshot); ok {
			fn(s, project, window, emit)
		}
	}
}

// NameFeedback is the feedback source: feedback per page, /feedback/by-page.
const NameFeedback = "feedback"

// keyFeedbackPages is how many pages /feedback/by-page lists, 1..100
// (0 = 100, the most it can: the endpoint has no second page).
const keyFeedbackPages = "feedback_pages"

var _ = register(&Def{
	Order:     30,
	Weight:    3,
	Name:      NameFeedback,
	Endpoints: []string{apiclient.EndpointFeedbackByPage},
	Paging:    PagingOnePage,
	DefaultOn: true,
	Settings:  []Setting{{Key: keyFeedbackPages, Min: 1, Max: apiclient.MaxFeedbackByPageLimit, Backfill: true}},
	Families: []*Family{
		family("mintlify_feedback_pages_truncated",
			"1 if the Mintlify API had feedback on more pages than the exported list holds, else 0.",
			familyFlags{}, feedbackEmit(func(s *FeedbackSnapshot, project, window string, emit Emit) {
				emit(boolFloat(s.truncated), project, window)
			})),
		family("mintlify_page_feedback",
			"Feedback given on one page in the window, by kind, for the pages with the most feedback.",
			familyFlags{pages: true}, feedbackEmit(func(s *FeedbackSnapshot, project, window string, emit Emit) {
				for _, p := range s.pages {
					emit(p.up, project, window, p.path, KindThumbsUp)
					emit(p.down, project, window, p.path, KindThumbsDown)
					emit(p.code, project, window, p.path, KindCodeSnippet)
				}
			}), "path", "kind"),
		family("mintlify_page_feedback_combined",
			"The Mintlify API's own total of feedback given on one page in the window, every kind included.",
			familyFlags{pages: true}, feedbackEmit(func(s *FeedbackSnapshot, project, window string, emit Emit) {
				for _, p := range s.pages {
					emit(p.total, project, window, p.path)
				}
			}), "path"),
	},
	make: func(def *Def, cfg Config) (Source, error) {
		limit := cmp.Or(cfg.Settings[keyFeedbackPages], apiclient.MaxFeedbackByPageLimit)
		return &feedbackSource{base: newBase(def, func(Query) int { return 1 }), cfg: cfg, limit: limit}, nil
	},
})

type feedbackSource struct {
	base
	cfg   Config
	limit int
}

func (s *feedbackSource) Walk(ctx context.Context, q Query) (Snapshot, error) {
	if err := checkRange(s.Name(), q); err != nil {
		return nil, err
	}
	res, err := s.cfg.Client.FeedbackByPage(ctx, q.Project, apiclient.FeedbackByPageQuery{
		DateRange: apiclient.DateRange{DateFrom: q.DateFrom, DateTo: q.DateTo}, Limit: s.limit,
	})
	if err != nil {
		return nil, err
	}
	snap := &FeedbackSnapshot{
		meta:      Meta{At: s.cfg.now(), DateFrom: q.DateFrom, DateTo: q.DateTo, Requests: res.Requests, Skipped: res.Skipped.Total()},
		truncated: res.HasMore,
		pages:     make([]pageFeedback, 0, len(res.Pages)),
	}
	seen := make(map[string]struct{}, len(res.Pages))
	for _, p := range res.Pages {
		path := s.cfg.label(p.Path)
		if _, dup := seen[path]; dup {
			continue // first copy wins, as in apiclient
		}
		seen[path] = struct{}{}
		snap.pages = append(snap.pages, pageFeedback{path: path,
			up: float64(p.ThumbsUp), down: float64(p.ThumbsDown), code: float64(p.Code), total: float64(p.Total)})
	}
	s.learn(q, res.Requests)
	return snap, nil
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// kindFeedback is the wire kind of FeedbackSnapshot.
var kindFeedback = wireKind("feedback", decodeData[wireFeedback])

func (v *FeedbackSnapshot) toWire() (string, wireData) {
	if v == nil {
		return "", nil
	}
	w := &wireFeedback{Meta: metaToWire(v.meta), Truncated: v.truncated, Pages: make([]wireFeedbackPage, len(v.pages))}
	for i, p := range v.pages {
		w.Pages[i] = wireFeedbackPage{Path: p.path, ThumbsUp: p.up, ThumbsDown: p.down, CodeSnippet: p.code, Total: p.total}
	}
	return kindFeedback, w
}

// wireFeedback is a FeedbackSnapshot.
type wireFeedback struct {
	Meta      wireMeta           `json:"meta"`
	Pages     []wireFeedbackPage `json:"pages"`
	Truncated bool               `json:"truncated"`
}

type wireFeedbackPage struct {
	Path        string  `json:"path"`
	ThumbsUp    float64 `json:"thumbsUp"`
	ThumbsDown  float64 `json:"thumbsDown"`
	CodeSnippet float64 `json:"codeSnippet"`
	Total       float64 `json:"total"`
}

func (w *wireFeedback) validate() error {
	if err := w.Meta.validate(len(w.Pages)); err != nil {
		return err
	}
	seen := make(uniqueLabels, len(w.Pages))
	for i, p := range w.Pages {
		if err := seen.add("page", i, p.Path); err != nil {
			return err
		}
		if err := checkValues(p.ThumbsUp, p.ThumbsDown, p.CodeSnippet, p.Total); err != nil {
			return fmt.Errorf("page %d: %w", i+1, err)
		}
	}
	return nil
}

func (w *wireFeedback) snapshot() Snapshot {
	s := &FeedbackSnapshot{meta: w.Meta.meta(), truncated: w.Truncated, pages: make([]pageFeedback, len(w.Pages))}
	for i, p := range w.Pages {
		s.pages[i] = pageFeedback{path: p.Path, up: p.ThumbsUp, down: p.ThumbsDown, code: p.CodeSnippet, total: p.Total}
	}
	return s
}
