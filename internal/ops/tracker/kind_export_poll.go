package tracker

import (
	"cmp"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
)

// What a read of a static export changes, and when it is read again.

// exportTransition is the record after reading j at at, and what to
// count: a final status is counted once, when seen live (the engine's
// rule, opState.sawFinal), with the export's duration.
func exportTransition(old exportRecord, j *apiclient.StaticExportJob, at time.Time, how sighting) (exportRecord, finishEvent) {
	rec := old
	rec.Status = intern(bounded.Label(j.Status))
	rec.Progress, rec.Pages = j.Progress, j.PageCount
	if !j.CreatedAt.IsZero() {
		rec.CreatedAt = j.CreatedAt.UTC()
	}
	if !j.UpdatedAt.IsZero() {
		rec.UpdatedAt = j.UpdatedAt.UTC()
	}
	rec.Error = bounded.Text(j.Error)
	rec.Lost = false
	ev := rec.sawFinal(apiclient.IsStaticExportFinal(rec.Status), rec.Status, at, how)
	if ev.finished != "" && !rec.CreatedAt.IsZero() {
		// From createdAt to its last updatedAt (else when seen final).
		ev.observeDur, ev.duration = true, cmp.Or(rec.UpdatedAt, at).Sub(rec.CreatedAt)
	}
	return rec, ev
}
