package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/statedir"
)

// stateVersion changes when what a day file holds does: a state directory
// of another version is refused rather than misread.
const stateVersion = 2

// params are what a state directory's walks depend on: resuming with other
// ones would mix two different backfills into one output.
type params struct {
	Version    int  `json:"version"`
	PageSize   int  `json:"pageSize"`
	TotalsOnly bool `json:"totalsOnly"`
	// Projects are each project's settings; a project added later is
	// added to the file.
	Projects map[string]projectParams `json:"projects"`
}

// projectParams are what one project's walks depend on.
type projectParams struct {
	// Location decides which conversations fall on a day.
	Location string `json:"location"`
	MaxPaths int    `json:"maxPaths"`
	Include  string `json:"include"`
	Exclude  string `json:"exclude"`
	// TopCategories of the assistant.
	TopCategories int `json:"topCategories"`
}

func paramsOf(cfg Config) params {
	out := params{Version: stateVersion, PageSize: cfg.PageSize, TotalsOnly: cfg.TotalsOnly, Projects: map[string]projectParams{}}
	for i := range cfg.Projects {
		p := &cfg.Projects[i]
		pp := projectParams{Location: p.Loc().String(), MaxPaths: p.Paths.MaxPaths}
		if p.Paths.Include != nil {
			pp.Include = p.Paths.Include.String()
		}
		if p.Paths.Exclude != nil {
			pp.Exclude = p.Paths.Exclude.String()
		}
		for _, sp := range p.Specs() {
			if v, ok := sp.Settings["top_categories"]; ok {
				pp.TopCategories = v
			}
		}
		out.Projects[p.ID] = pp
	}
	return out
}

// maxStateFile bounds a file of the state directory read: a FIFO, a
// device or a file over it is an error that names it, never an open that
// blocks or a read without end.
const maxStateFile = 32 << 20

// checkParams refuses a state directory of other settings, and records
// the projects it did not know yet.
func checkParams(cfg Config) error {
	want := paramsOf(cfg)
	file := filepath.Join(cfg.StateDir, "params.json")
	data, err := statedir.ReadFile(file, maxStateFile)
	if errors.Is(err, os.ErrNotExist) {
		data, _ = json.Marshal(want)
		return writeAtomic(file, data)
	}
	if err != nil {
		return fmt.Errorf("--backfill.state-dir: %w", err)
	}
	var got params
	if err := json.Unmarshal(data, &got); err != nil || got.Version != want.Version || got.PageSize != want.PageSize || got.TotalsOnly != want.TotalsOnly {
		return fmt.Errorf("--backfill.state-dir: %s holds walks fetched with other settings or by another version (%s); resume with the same --analytics.page-size and --backfill.totals-only, or use another state directory",
			cfg.StateDir, strings.TrimSpace(string(data)))
	}
	added := false
	for _, id := range slices.Sorted(maps.Keys(want.Projects)) {
		have, ok := got.Projects[id]
		if !ok {
			if got.Projects == nil {
				got.Projects = map[string]projectParams{}
			}
			got.Projects[id], added = want.Projects[id], true
			continue
		}
		if have != want.Projects[id] {
			theirs, _ := json.Marshal(have)
			return fmt.Errorf("--backfill.state-dir: %s holds days of project %s fetched with other settings (%s); resume with the same time zone, path cap and filters and assistant top categories, or use another state directory",
				cfg.StateDir, id, theirs)
		}
	}
	if !added {
		return nil
	}
	data, _ = json.Marshal(got)
	return writeAtomic(file, data)
}

// dayFile is one finished walk: what it cost, and its samples by family
// name, the label values after project and window (the job gives those).
// A family is decoded when it is written out, not before.
type dayFile struct {
	Requests int                        `json:"requests"`
	Families map[string]json.RawMessage `json:"families"`
}

// rows are one family's samples of a walk.
type rows struct {
	Labels [][]string `json:"labels"`
	Values []float64  `json:"values"`
}

// record turns a walk's snapshot into its day file: every sample each of
// the source's families emits for it (families of the project rather than
// a window, such as the age of the oldest pending feedback, are no day's).
func record(def *sources.Def, snap sources.Snapshot, project, window string) ([]byte, error) {
	out := struct {
		Requests int              `json:"requests"`
		Families map[string]*rows `json:"families"`
	}{Requests: snap.Meta().Requests, Families: map[string]*rows{}}
	for _, f := range def.Families {
		if f.PerProject {
			continue
		}
		r := &rows{}
		f.Emit(snap, project, window, func(v float64, lv ...string) {
			r.Labels = append(r.Labels, slices.Clone(lv[2:])) // after project and window
			r.Values = append(r.Values, v)
		})
		if len(r.Values) > 0 {
			out.Families[f.Name] = r
		}
	}
	data, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("backfill state: %w", err)
	}
	return data, nil
}

func readDay(file string) (*dayFile, error) {
	data, err := statedir.ReadFile(file, maxStateFile)
	if err != nil {
		return nil, err
	}
	var d dayFile
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("backfill state %s is damaged (delete it to fetch that day again): %w", file, err)
	}
	return &d, nil
}

// family decodes the samples of family name (none when the walk had none).
func (d *dayFile) family(name, file string) (*rows, error) {
	raw, ok := d.Families[name]
	if !ok {
		return &rows{}, nil
	}
	var r rows
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Labels) != len(r.Values) {
		return nil, fmt.Errorf("backfill state %s is damaged (delete it to fetch that day again): family %s unreadable", file, name)
	}
	return &r, nil
}

// writeAtomic writes data to file through a temporary file and a rename, so
// that an interrupted run never leaves half a day behind.
func writeAtomic(file string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("backfill state: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".tmp-*")
	if err != nil {
		return fmt.Errorf("backfill state: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("backfill state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("backfill state: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("backfill state: %w", err)
	}
	return nil
}
