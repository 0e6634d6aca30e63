package gateway

// SetProjects makes ids the accepted projects, at start and for a
// configuration reload: jobs of a project no longer accepted stay tracked
// to their end, but new creates, follow-ups and reads for it answer 404. A
// project accepted for the first time (at start, or added by a reload) has
// its create and message limits seeded from the tracker's recent creates
// and follow-ups, so neither a restart nor a reload resets the hour.
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
	g.seed(ids)
	g.projects.Store(&set)
}

// seed seeds the limits of the projects of ids not seeded before.
func (g *Gateway) seed(ids []string) {
	g.seedMu.Lock()
	defer g.seedMu.Unlock()
	var fresh []string
	for _, p := range ids {
		if !g.seeded[p] {
			g.seeded[p] = true
			fresh = append(fresh, p)
		}
	}
	if len(fresh) == 0 {
		return
	}
	now := g.cfg.Now()
	creates, messages := g.tracker.RecentCreates(createWindow), g.tracker.RecentMessages(createWindow)
	for _, p := range fresh {
		g.limiter.seed(p, creates[p], now)
		g.messages.seed(p, messages[p], now)
	}
}

// notFound is the 404's message for a project that accepts no jobs: the
// setting to change, whether the exporter exports it or not.
func (g *Gateway) notFound(project string) string {
	if g.cfg.Exported != nil && g.cfg.Exported(project) {
		return "project not found: it does not take agent jobs (agent_jobs: false in --config.file; set agent_jobs: true on it, as every --mintlify.project of the flags has)"
	}
	return "project not found: it is not configured in this exporter (--mintlify.project, or projects: in --config.file with agent_jobs: true)"
}
