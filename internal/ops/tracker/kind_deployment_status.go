package tracker

import "github.com/mintlify-exporter/mintlify_exporter/internal/status"

// deploymentRows are the status page's rows of the deployments followed
// last (newest first).
func deploymentRows(recent []*deployEntry) []status.Deployment {
	out := []status.Deployment{}
	for _, e := range recent {
		v := e.rec.view(&e.polling)
		out = append(out, status.Deployment{Project: v.ProjectID, Kind: v.Kind, StatusID: v.ID, Status: v.Status, Branch: v.Commit.Ref,
			SHA: v.Commit.SHA, PreviewURL: v.PreviewURL, CreatedAt: v.CreatedAt.Time, EndedAt: v.EndedAt.Time})
	}
	return out
}
