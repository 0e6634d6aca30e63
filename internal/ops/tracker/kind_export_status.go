package tracker

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// statusLocked adds the static exports' rows of the status page: those
// followed last, a bundle said ready with when it expires (never its
// URL). s.mu is held.
func (k exportKind) statusLocked(out *status.Jobs, now time.Time) {
	recent := make([]*exportEntry, 0, len(k.s.exports))
	for _, e := range k.s.exports {
		if k.s.projects[e.rec.Project] {
			recent = append(recent, e)
		}
	}
	slices.SortFunc(recent, func(a, b *exportEntry) int {
		return cmp.Or(b.rec.TrackedAt.Compare(a.rec.TrackedAt), strings.Compare(b.rec.ID, a.rec.ID))
	})
	out.StaticExports = []status.StaticExport{}
	for _, e := range recent[:min(status.MaxStaticExports, len(recent))] {
		v := e.view()
		row := status.StaticExport{Project: v.ProjectID, JobID: v.JobID, Status: v.Status, Domain: v.Domain, Progress: v.Progress,
			Pages: v.PageCount, CreatedAt: v.CreatedAt.Time, UpdatedAt: v.UpdatedAt.Time}
		switch exp := e.rec.BundleExpiresAt; {
		case exp.IsZero():
		case exp.After(now):
			row.Bundle = "bundle ready, expires at " + exp.UTC().Format(time.RFC3339)
		default:
			row.Bundle = "bundle expired at " + exp.UTC().Format(time.RFC3339)
		}
		out.StaticExports = append(out.StaticExports, row)
	}
}
