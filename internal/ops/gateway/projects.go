package gateway

import (
	"net/http"
	"strings"
)

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
	g.precreateTriggers()
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

// refuseProject answers a request for a project that takes no agent jobs,
// by the one rule of every kind's routes (refusedProject).
func (g *Gateway) refuseProject(w http.ResponseWriter, project string) {
	refusedProject(w, g.cfg.Exported != nil && g.cfg.Exported(project), "agent jobs",
		"agent_jobs: false in --config.file; set agent_jobs: true on it, as every --mintlify.project of the flags has",
		"--mintlify.project, or projects: in --config.file with agent_jobs: true")
}

// refusedProject is the one rule for a project a kind's routes do not
// serve, for every kind: 404 when the exporter does not know the project
// at all (nothing of it exists here), 403 when it exports the project but
// the project does not take this kind (it exists, and this exporter
// refuses it: the setting to change is named). Until issue 38 a project
// without agent_jobs answered 404 and one without deployments 403.
func refusedProject(w http.ResponseWriter, exported bool, what, setting, configure string) {
	if exported {
		writeError(w, http.StatusForbidden, "this project does not take "+what+" through the exporter ("+setting+")")
		return
	}
	writeError(w, http.StatusNotFound, "project not found: it is not configured in this exporter ("+configure+")")
}

// projectSet is the set of projects of list (nil: none).
func projectSet(list func() []string) map[string]bool {
	set := map[string]bool{}
	if list != nil {
		for _, p := range list() {
			set[p] = true
		}
	}
	return set
}

// kindProject wraps h, a route of a kind whose projects are those of
// list (read per request) and set by the configuration key key, behind the
// one rule for projects (refusedProject) and ids (badIDs).
func (g *Gateway) kindProject(list func() []string, key string, h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return g.kindProjectHint(list, strings.ReplaceAll(key, "_", " "), "set "+key+": true on it in --config.file", h)
}

// kindProjectHint is kindProject of a kind whose projects take it as hint
// says (automations: listed under automations:), what naming the kind.
func (g *Gateway) kindProjectHint(list func() []string, what, hint string, h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		project := r.PathValue("projectId")
		if !projectSet(list)[project] {
			refusedProject(w, g.cfg.Exported != nil && g.cfg.Exported(project), what,
				hint, "--mintlify.project, or projects: in --config.file")
			return
		}
		if badIDs(w, r) {
			return
		}
		h(w, r, project)
	}
}
