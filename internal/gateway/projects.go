package gateway

// SetProjects makes ids the accepted projects, for a configuration reload:
// jobs of a project no longer accepted stay tracked to their end, but new
// creates, follow-ups and reads for it answer 404.
func (g *Gateway) SetProjects(ids []string) {
	set := make(map[string]bool, len(ids))
	for _, p := range ids {
		set[p] = true
		for _, r := range rejectReasons {
			g.rejected.WithLabelValues(p, r)
		}
		for _, r := range messageRejectReasons {
			g.msgRejected.WithLabelValues(p, r)
		}
	}
	g.projects.Store(&set)
}
