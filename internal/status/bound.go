package status

import "github.com/mintlify-exporter/mintlify_exporter/internal/bounded"

// bound makes every string of the report that may come from the API (a
// job's status or id) or from a long configuration (a project id, an
// organization name) a bounded one, by the rule of label values
// (bounded.Label: at most 256 bytes, a longer one cut with a hash suffix),
// and bounds the job statuses of a project in number (bounded.Fold: the
// known ones, a few others, the rest under "other"). The HTML page and the
// JSON show the same bounded report. It works on r's copies (derive).
func (r *Report) bound() {
	for i := range r.Organizations {
		o := &r.Organizations[i]
		o.Name = bounded.Label(o.Name)
		o.Projects = labels(o.Projects)
	}
	for i := range r.Demands {
		d := &r.Demands[i]
		d.Organization, d.Project = bounded.Label(d.Organization), bounded.Label(d.Project)
		d.Source, d.Window = bounded.Label(d.Source), bounded.Label(d.Window)
	}
	if r.Jobs == nil {
		return
	}
	for i := range r.Jobs.Projects {
		p := &r.Jobs.Projects[i]
		p.Project = bounded.Label(p.Project)
		by := make(map[string]int, min(len(p.ByStatus), 1024))
		for s, n := range p.ByStatus {
			by[bounded.Label(s)] += n
		}
		if len(by) > len(knownStatuses)+bounded.MaxUnknownValues {
			by, _ = bounded.Fold(by, knownStatuses, bounded.MaxUnknownValues)
		}
		p.ByStatus = by
	}
	if pl := r.Jobs.MostOverduePoll; pl != nil {
		pl.Project, pl.JobID = bounded.Label(pl.Project), bounded.Label(pl.JobID)
	}
	d := r.Jobs.Deployments[:min(len(r.Jobs.Deployments), MaxDeployments)]
	r.Jobs.Deployments = make([]Deployment, len(d))
	for i, v := range d {
		r.Jobs.Deployments[i] = Deployment{Project: bounded.Label(v.Project), Kind: bounded.Label(v.Kind), StatusID: bounded.Label(v.StatusID),
			Status: bounded.Label(v.Status), Branch: bounded.Label(v.Branch), SHA: bounded.Label(v.SHA), PreviewURL: bounded.Label(v.PreviewURL),
			CreatedAt: v.CreatedAt, EndedAt: v.EndedAt}
	}
	x := r.Jobs.StaticExports[:min(len(r.Jobs.StaticExports), MaxStaticExports)]
	r.Jobs.StaticExports = make([]StaticExport, len(x))
	for i, v := range x {
		r.Jobs.StaticExports[i] = StaticExport{Project: bounded.Label(v.Project), JobID: bounded.Label(v.JobID), Status: bounded.Label(v.Status),
			Domain: bounded.Label(v.Domain), Progress: v.Progress, Pages: v.Pages, Bundle: bounded.Label(v.Bundle), CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt}
	}
	boundAutomations(r)
}

func boundAutomations(r *Report) {
	a := r.Jobs.Automations[:min(len(r.Jobs.Automations), MaxAutomationRuns)]
	r.Jobs.Automations = make([]AutomationRun, len(a))
	for i, v := range a {
		r.Jobs.Automations[i] = AutomationRun{Project: bounded.Label(v.Project), Automation: bounded.Label(v.Automation), RunID: bounded.Label(v.RunID),
			JobID: bounded.Label(v.JobID), Status: bounded.Label(v.Status), Follow: bounded.Label(v.Follow), TriggeredAt: v.TriggeredAt}
	}
}

func labels(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = bounded.Label(s)
	}
	return out
}
