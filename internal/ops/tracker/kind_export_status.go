package tracker

import (
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// exportRows are the status page's rows of the static exports followed
// last (newest first): a bundle said ready with when it expires, never
// its URL (which is not kept).
func exportRows(recent []*exportEntry, now time.Time) []status.StaticExport {
	out := []status.StaticExport{}
	for _, e := range recent {
		v := e.rec.view(&e.polling)
		row := status.StaticExport{Project: v.ProjectID, JobID: v.JobID, Status: v.Status, Domain: v.Domain, Progress: v.Progress,
			Pages: v.PageCount, CreatedAt: v.CreatedAt.Time, UpdatedAt: v.UpdatedAt.Time}
		switch exp := e.rec.BundleExpiresAt; {
		case exp.IsZero():
		case exp.After(now):
			row.Bundle = "bundle ready, expires at " + exp.UTC().Format(time.RFC3339)
		default:
			row.Bundle = "bundle expired at " + exp.UTC().Format(time.RFC3339)
		}
		out = append(out, row)
	}
	return out
}
