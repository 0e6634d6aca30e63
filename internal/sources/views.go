package sources

import (
	"context"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// NameViews is the views source: content views per page, /views.
const NameViews = "views"

var _ = register(&Def{
	Order:      20,
	Weight:     1,
	Name:       NameViews,
	Endpoints:  []string{apiclient.EndpointViews},
	Paging:     PagingOffset,
	DefaultOn:  true,
	TotalsOnly: true,
	Families: trafficFamilies(true,
		[2]string{"mintlify_site_page_views", "Content views of the whole site in the window, by traffic (human or ai); views add up across days."},
		[2]string{"mintlify_site_page_views_combined", "The Mintlify API's own total of content views of the whole site in the window."},
		[2]string{"mintlify_page_views", "Content views of one page in the window, by traffic (human or ai), as the Mintlify API reports them."},
		[2]string{"mintlify_page_views_combined", "The Mintlify API's own total of content views of one page in the window."},
	),
	make: func(def *Def, cfg Config) (Source, error) {
		return &trafficSource{base: newBase(def, trafficGuess), cfg: cfg,
			totals: func(ctx context.Context, q Query) (apiclient.OffsetWalk, error) {
				return cfg.Client.ViewsTotals(ctx, q.Project, apiclient.DateRange{DateFrom: q.DateFrom, DateTo: q.DateTo})
			},
			walk: func(ctx context.Context, q Query, pageSize int, visit func([]apiclient.PathVisitors)) (apiclient.OffsetWalk, error) {
				// The same shape under another name: one path policy ranks,
				// filters and caps visitors and views alike.
				var rows []apiclient.PathVisitors
				return cfg.Client.ViewsPages(ctx, q.Project, apiclient.DateRange{DateFrom: q.DateFrom, DateTo: q.DateTo}, pageSize, cfg.MaxPages, func(page []apiclient.PathViews) {
					rows = rows[:0]
					for _, p := range page {
						rows = append(rows, apiclient.PathVisitors{Path: p.Path, VisitorCounts: p.TrafficCounts})
					}
					visit(rows)
				})
			},
		}, nil
	},
})
