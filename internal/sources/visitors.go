package sources

import (
	"cmp"
	"context"
	"fmt"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
)

// NameVisitors is the visitors source: unique visitors per page, /visitors.
const NameVisitors = "visitors"

var _ = register(&Def{
	Order:           10,
	Weight:          1,
	BackfillWindows: true,
	Name:            NameVisitors,
	Endpoints:       []string{apiclient.EndpointVisitors},
	Paging:          PagingOffset,
	DefaultOn:       true,
	TotalsOnly:      true,
	Families: trafficFamilies(false,
		// Unique visitors are not additive (the conventions): the HELP says
		// so in a few words, the README's metric table in full.
		[2]string{"mintlify_site_unique_visitors", "Unique visitors of the whole site in the window, by traffic (human or ai); not additive across windows."},
		[2]string{"mintlify_site_unique_visitors_deduplicated", "The Mintlify API's site-wide unique visitors in the window, deduplicated across human and AI traffic."},
		[2]string{"mintlify_page_unique_visitors", "Unique visitors of one page in the window, by traffic (human or ai); not additive across paths or windows."},
		[2]string{"mintlify_page_unique_visitors_deduplicated", "The Mintlify API's unique visitors of one page in the window, deduplicated across human and AI traffic."},
	),
	make: func(def *Def, cfg Config) (Source, error) {
		return &trafficSource{base: newBase(def, trafficGuess), cfg: cfg,
			totals: func(ctx context.Context, q Query) (apiclient.OffsetWalk, error) {
				return cfg.Client.VisitorsTotals(ctx, q.Project, apiclient.VisitorsQuery{DateFrom: q.DateFrom, DateTo: q.DateTo})
			},
			walk: func(ctx context.Context, q Query, pageSize int, visit func([]apiclient.PathVisitors)) (apiclient.OffsetWalk, error) {
				return cfg.Client.VisitorsPages(ctx, q.Project, apiclient.VisitorsQuery{DateFrom: q.DateFrom, DateTo: q.DateTo}, pageSize, cfg.MaxPages, visit)
			},
		}, nil
	},
})

// trafficSource is visitors or views: an offset walk of paths, or the site
// totals alone in one request.
type trafficSource struct {
	base
	cfg    Config
	totals func(ctx context.Context, q Query) (apiclient.OffsetWalk, error)
	// walk hands every page of paths to visit as it arrives, and returns
	// the site totals, the requests sent and the rows skipped; views
	// convert their rows to the visitors' so that one path policy ranks
	// and caps both.
	walk func(ctx context.Context, q Query, pageSize int, visit func([]apiclient.PathVisitors)) (apiclient.OffsetWalk, error)
}

func (s *trafficSource) Walk(ctx context.Context, q Query) (Snapshot, error) {
	if err := checkRange(s.Name(), q); err != nil {
		return nil, err
	}
	if s.cfg.Client == nil {
		return nil, fmt.Errorf("%s: no API client", s.Name())
	}
	var (
		w    apiclient.OffsetWalk
		err  error
		data *analytics.Snapshot
	)
	if q.TotalsOnly {
		if w, err = s.totals(ctx, q); err == nil {
			data = totalsOnlyTraffic(w.Totals, q.DateFrom, q.DateTo, s.cfg.now())
		}
	} else {
		// Only the paths to export are kept as the pages arrive: the
		// walk's memory follows paths.max, not the site.
		b := newPathBuilder(s.cfg.Paths)
		if w, err = s.walk(ctx, q, cmp.Or(s.cfg.PageSize, apiclient.MaxPageSize), b.Add); err == nil {
			data = b.Snapshot(w.Totals, w.Requests, q.DateFrom, q.DateTo, s.cfg.now())
		}
	}
	if err != nil {
		return nil, err
	}
	s.learn(q, w.Requests)
	return &TrafficSnapshot{Snapshot: data, totalsOnly: q.TotalsOnly, skipped: w.Skipped.Total(), totalsSkipped: w.TotalsSkipped}, nil
}
