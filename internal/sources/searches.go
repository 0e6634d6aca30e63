package sources

import (
	"context"
	"fmt"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// SearchesSnapshot is the API's count of searches in the window and, when
// the operator opted in, the most searched queries.
type SearchesSnapshot struct {
	meta    Meta
	total   float64
	queries []searchQuery
}

type searchQuery struct {
	query     string
	hits, ctr float64
}

// Meta implements Snapshot.
func (s *SearchesSnapshot) Meta() Meta { return s.meta }

func searchesEmit(fn func(s *SearchesSnapshot, project, window string, emit Emit)) func(Snapshot, string, string, Emit) {
	return func(snap Snapshot, project, window string, emit Emit) {
		if s, ok := snap.(*SearchesSnapshot); ok {
			fn(s, project, window, emit)
		}
	}
}

// NameSearches is the searches source: searches and top queries, /searches.
const NameSearches = "searches"

// keyTopQueries is how many of the most searched queries are exported
// with their text as a label (0 = none: queries may hold personal data).
const keyTopQueries = "top_queries"

var _ = register(&Def{
	Order:     50,
	Weight:    3,
	Name:      NameSearches,
	Endpoints: []string{apiclient.EndpointSearches},
	Paging:    PagingCursorToNull,
	DefaultOn: true,
	Settings: []Setting{{Key: keyTopQueries, Min: 0, Max: 1000, Flag: "analytics.search-top-queries",
		Help: "Export the N most searched queries with their text as a label (0: none; queries may hold personal data)."}},
	Families: []*Family{
		family("mintlify_searches", "Searches made on the site in the window, the Mintlify API's totalSearches; searches are events and add up across days.",
			familyFlags{additive: true, totals: true}, searchesEmit(func(s *SearchesSnapshot, project, window string, emit Emit) {
				emit(s.total, project, window)
			})),
		family("mintlify_search_query_hits", "Times one of the most searched queries was searched in the window (only with top queries configured).",
			familyFlags{pages: true}, searchesEmit(func(s *SearchesSnapshot, project, window string, emit Emit) {
				for _, q := range s.queries {
					emit(q.hits, project, window, q.query)
				}
			}), "query"),
		family("mintlify_search_query_click_through_ratio", "Share of the searches of one of the most searched queries in the window after which a result was clicked.",
			familyFlags{pages: true}, searchesEmit(func(s *SearchesSnapshot, project, window string, emit Emit) {
				for _, q := range s.queries {
					emit(q.ctr, project, window, q.query)
				}
			}), "query"),
	},
	make: func(def *Def, cfg Config) (Source, error) {
		// The API orders by hits: the top N take ceil(N/100) requests, and
		// the total alone one.
		cost := max(1, (cfg.Settings[keyTopQueries]+apiclient.MaxSearchesLimit-1)/apiclient.MaxSearchesLimit)
		return &searchesSource{base: newBase(def, func(Query) int { return cost }), cfg: cfg}, nil
	},
})

type searchesSource struct {
	base
	cfg Config
}

func (s *searchesSource) Walk(ctx context.Context, q Query) (Snapshot, error) {
	if err := checkRange(s.Name(), q); err != nil {
		return nil, err
	}
	top := s.cfg.Settings[keyTopQueries]
	if q.TotalsOnly {
		top = 0
	}
	res, err := s.cfg.Client.TopSearches(ctx, q.Project, apiclient.DateRange{DateFrom: q.DateFrom, DateTo: q.DateTo}, top, s.cfg.MaxPages)
	if err != nil {
		return nil, err
	}
	snap := &SearchesSnapshot{
		meta:    Meta{At: s.cfg.now(), DateFrom: q.DateFrom, DateTo: q.DateTo, Requests: res.Requests, TotalsOnly: top == 0, Skipped: res.Skipped.Total(), TotalsSkipped: res.TotalSkipped},
		total:   float64(res.TotalSearches),
		queries: make([]searchQuery, 0, len(res.Queries)),
	}
	seen := make(map[string]struct{}, len(res.Queries))
	for _, r := range res.Queries {
		query := s.cfg.label(r.Query)
		if _, dup := seen[query]; dup {
			continue // the more searched copy, read first, wins
		}
		seen[query] = struct{}{}
		snap.queries = append(snap.queries, searchQuery{query: query, hits: float64(r.Hits), ctr: r.CTR})
	}
	s.learn(q, res.Requests)
	return snap, nil
}

// kindSearches is the wire kind of SearchesSnapshot.
var kindSearches = wireKind("searches", decodeData[wireSearches])

func (v *SearchesSnapshot) toWire() (string, wireData) {
	if v == nil {
		return "", nil
	}
	w := &wireSearches{Meta: metaToWire(v.meta), Total: v.total, Queries: make([]wireQuery, len(v.queries))}
	for i, q := range v.queries {
		w.Queries[i] = wireQuery{Query: q.query, Hits: q.hits, CTR: q.ctr}
	}
	return kindSearches, w
}

// wireSearches is a SearchesSnapshot.
type wireSearches struct {
	Meta    wireMeta    `json:"meta"`
	Total   float64     `json:"total"`
	Queries []wireQuery `json:"queries"`
}

type wireQuery struct {
	Query string  `json:"query"`
	Hits  float64 `json:"hits"`
	CTR   float64 `json:"ctr"`
}

func (w *wireSearches) validate() error {
	if err := w.Meta.validate(len(w.Queries)); err != nil {
		return err
	}
	if err := checkValues(w.Total); err != nil {
		return fmt.Errorf("total: %w", err)
	}
	seen := make(uniqueLabels, len(w.Queries))
	for i, q := range w.Queries {
		if err := seen.add("query", i, q.Query); err != nil {
			return err
		}
		if err := checkValues(q.Hits, q.CTR); err != nil {
			return fmt.Errorf("query %d: %w", i+1, err)
		}
	}
	return nil
}

func (w *wireSearches) snapshot() Snapshot {
	s := &SearchesSnapshot{meta: w.Meta.meta(), total: w.Total, queries: make([]searchQuery, len(w.Queries))}
	for i, q := range w.Queries {
		s.queries[i] = searchQuery{query: q.Query, hits: q.Hits, ctr: q.CTR}
	}
	return s
}
