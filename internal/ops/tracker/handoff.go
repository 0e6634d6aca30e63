package tracker

import (
	"slices"
	"strings"
)

// Kinds of operation as the engine names them (Unsaved.Kind).
const (
	OpJob        = "job"
	OpDeployment = "deployment"
	OpExport     = "static_export"
	OpAutomation = "automation"
)

// Unsaved is an operation the API acknowledged as started (a job created,
// a deployment triggered) whose record could not be saved: its intent is
// still in the state, so a tracker that loads the state finds an outcome
// it does not know. Issue 36 (4.1): during a Redis stall the gateway moved
// to the other replica and such a deployment was never followed. Whoever
// holds the gateway next settles it with its real id, through the route an
// operator uses (track ?intent=), so it is followed to its end, counted
// once, and its Idempotency-Key answered with it.
type Unsaved struct {
	Kind    string // OpJob, OpDeployment or OpExport
	Project string
	ID      string // the job id or the status id
	Intent  string // the intent id it settles
}

// Unsaved lists the operations acknowledged upstream whose record is not
// saved yet, in a stable order. A stopped tracker still answers it: the
// leader asks once a term has ended.
func (s *Tracker) Unsaved() []Unsaved {
	s.mu.RLock()
	var out []Unsaved
	for _, k := range s.kinds {
		out = k.unsavedLocked(out)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b Unsaved) int {
		return strings.Compare(a.Kind+"\x00"+a.Project+"\x00"+a.ID, b.Kind+"\x00"+b.Project+"\x00"+b.ID)
	})
	return out
}

// intentID is the intent id of its store key (storeKey(project, id)).
func intentID(project, ikey string) string { return strings.TrimPrefix(ikey, project+"\x00") }
