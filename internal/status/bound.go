package status

import "github.com/mintlify-exporter/mintlify_exporter/internal/bounded"

// bound makes every string of the report that may come from the API (an
// operation's status or id) or from a long configuration (a project id,
// an organization name) a bounded one, by the rule of label values
// (bounded.Label: at most 256 bytes, a longer one cut with a hash suffix),
// and a section's rows at most MaxRows. The kinds bound what their
// sections' JSON holds as they read it (their records' strings are
// bounded). It works on r's copies (derive).
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
	if pl := r.Jobs.MostOverduePoll; pl != nil {
		pl.Project, pl.Kind, pl.JobID = bounded.Label(pl.Project), bounded.Label(pl.Kind), bounded.Label(pl.JobID)
	}
	for i := range r.Jobs.Sections {
		s := &r.Jobs.Sections[i]
		rows := s.Rows
		s.Rows = make([]Row, len(rows))
		for i, row := range rows {
			cells := make([]Cell, len(row.Cells))
			for j, c := range row.Cells {
				c.Text = bounded.Label(c.Text)
				cells[j] = c
			}
			s.Rows[i] = Row{Project: bounded.Label(row.Project), Cells: cells}
		}
	}
}

func labels(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = bounded.Label(s)
	}
	return out
}
