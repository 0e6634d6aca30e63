package sources

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/statedir"
)

// stateVersion changes when the file's meaning does; a file of another
// version is read again from the API rather than misread. Version 2: rows
// are turns, told apart by id and timestamp (Recent holds the turn times
// of each id), and the days count distinct conversations; a version 1 file
// counted one row per id and is read again.
const stateVersion = 2

// maxStateBytes bounds a state file read: a FIFO, a device or a file over
// it is damaged (never an open that blocks or a read without end).
const maxStateBytes = 32 << 20

// assistantState is what the assistant source knows of one project's
// conversations: counts per local day, and where reading stopped. It is
// small (a few maps per day) and kept in one JSON file per project.
type assistantState struct {
	Version int    `json:"version"`
	Project string `json:"project"`
	// Location is the time zone the days are counted in: days counted in
	// another zone are read again.
	Location string `json:"location"`
	// From is the first day (YYYY-MM-DD) whose conversations were all
	// read; empty when nothing was read yet.
	From string `json:"from"`
	// Watermark is the newest conversation timestamp seen (or where the
	// first read started, when it found none).
	Watermark time.Time `json:"watermark"`
	// Days are counts per local day (YYYY-MM-DD).
	Days map[string]*dayCounts `json:"days"`
	// Recent holds, by conversation id, the times of the turns at or after
	// Watermark minus the overlap: the ones the next read sees again,
	// counted once (a turn is its id and time together).
	Recent map[string][]time.Time `json:"recent"`
}

// dayCounts are one day's turns by resolution, response type and category
// (null categories under uncategorized), and its distinct conversations.
type dayCounts struct {
	// Total is the day's turns.
	Total int64 `json:"total"`
	// Conversations is the day's distinct conversation ids.
	Conversations int64            `json:"conversations"`
	Resolution    map[string]int64 `json:"resolution"`
	ResponseType  map[string]int64 `json:"responseType"`
	Category      map[string]int64 `json:"category"`
	// OtherCategories and Folded are what bound folded: the day's
	// turns of categories beyond its cap, and how many distinct
	// values of each label were summed under "other".
	OtherCategories int64            `json:"otherCategories,omitempty"`
	Folded          map[string]int64 `json:"folded,omitempty"`
}

func newState(project, location string) *assistantState {
	return &assistantState{Version: stateVersion, Project: project, Location: location,
		Days: map[string]*dayCounts{}, Recent: map[string][]time.Time{}}
}

func (st *assistantState) day(d string) *dayCounts {
	c := st.Days[d]
	if c == nil {
		c = &dayCounts{Resolution: map[string]int64{}, ResponseType: map[string]int64{}, Category: map[string]int64{}}
		st.Days[d] = c
	}
	return c
}

var safeName = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,100}$`)

// stateFile is the file of a project: its id when that is a safe file
// name, else the id's base64.
func stateFile(dir, project string) string {
	name := project
	if !safeName.MatchString(project) {
		name = "b64_" + base64.RawURLEncoding.EncodeToString([]byte(project))
	}
	return filepath.Join(dir, "assistant-"+name+".json")
}

// loadState reads a project's state; a missing file is a fresh state, and
// so is a file of another project, version or time zone. A damaged file is
// an error (the caller starts afresh and says so).
func loadState(dir, project, location string) (*assistantState, error) {
	fresh := newState(project, location)
	if dir == "" {
		return fresh, nil
	}
	data, err := statedir.ReadFile(stateFile(dir, project), maxStateBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return fresh, nil
	}
	if err != nil {
		return fresh, fmt.Errorf("reading assistant state: %w", err)
	}
	var st assistantState
	if err := json.Unmarshal(data, &st); err != nil {
		return fresh, fmt.Errorf("assistant state %s is damaged: %w", stateFile(dir, project), err)
	}
	if st.Version != stateVersion || st.Project != project || st.Location != location || st.Days == nil {
		return fresh, nil
	}
	if st.Recent == nil {
		st.Recent = map[string][]time.Time{}
	}
	return &st, nil
}

// save writes the state atomically: a temporary file in the same
// directory, synced, then renamed over the old one, so that a crash leaves
// the old state or the new one, never half of either. The state is encoded
// before the write, which writes bounds: a write abandoned on a frozen disk
// holds no reference to the state, which the next walk changes.
func (st *assistantState) save(dir string, writes *statedir.Writes, syncFile func(*os.File) error) error {
	if dir == "" {
		return nil
	}
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encoding assistant state: %w", err)
	}
	path := stateFile(dir, st.Project)
	if err := writes.Do(func() error { return writeAtomically(dir, path, data, syncFile) }); err != nil {
		return fmt.Errorf("writing assistant state: %w", err)
	}
	return nil
}

func writeAtomically(dir, path string, data []byte, syncFile func(*os.File) error) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".assistant-*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = syncFile(tmp)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}
