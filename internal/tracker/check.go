package tracker

import (
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/tracker/store"
)

// CheckState reads the state file at path, without bbolt and without
// changing it, and reports what it holds (jobs, create and message intents) and what is
// damaged.
func CheckState(path string) (*store.Report, error) {
	return store.Check(path, classify, pick)
}

// SalvageState copies every readable job and create intent of the state
// file at src into a new state file at dst, leaving src as it is. From a
// damaged file it also takes the values found only on pages the file's
// tree no longer reaches, for keys the tree lacks, choosing the most
// advanced version of a job found more than once.
func SalvageState(src, dst string) (*store.Report, error) {
	return store.Salvage(src, dst, storeOptions(&Config{LockTimeout: time.Second}), classify, pick)
}

// classify keeps the values that decode as what their key says.
func classify(bucket string, k, v []byte) (string, bool) {
	isJob := func() bool {
		r, err := decodeRecord(v)
		return err == nil && storeKey(r.Project, r.Job.ID) == string(k)
	}
	isIntent := func() bool {
		in, err := decodeIntent(v)
		return err == nil && storeKey(in.Project, in.ID) == string(k)
	}
	isMessageIntent := func() bool {
		in, err := decodeMessageIntent(v)
		return err == nil && storeKey(in.Project, in.ID) == string(k)
	}
	switch bucket {
	case store.Jobs:
		return store.Jobs, isJob()
	case bucketIntents:
		return bucketIntents, isIntent()
	case bucketMessageIntents:
		return bucketMessageIntents, isMessageIntent()
	case "":
		if isJob() {
			return store.Jobs, true
		}
		// A message intent also has what a create intent needs: try it
		// first.
		if isMessageIntent() {
			return bucketMessageIntents, true
		}
		if isIntent() {
			return bucketIntents, true
		}
	}
	return "", false
}

// pick prefers, of two versions of a job, the one that got further: a
// version is only ever written after the ones it follows.
func pick(bucket string, a, b []byte) []byte {
	if bucket != store.Jobs {
		return a
	}
	ra, errA := decodeRecord(a)
	rb, errB := decodeRecord(b)
	switch {
	case errA != nil:
		return b
	case errB != nil:
		return a
	}
	if progress(&rb) > progress(&ra) {
		return b
	}
	return a
}

func progress(r *record) int {
	// A later turn is further than anything an earlier one reached.
	n := r.turn()*1000 + len(r.Messages)
	if r.Lost || apiclient.IsTerminal(r.Job.Status) {
		n += 100
	}
	for c := r.Counted; c != 0; c &= c - 1 {
		n += 10
	}
	if r.PRCounted {
		n += 5
	}
	if r.WatchEnded {
		n++
	}
	if r.IdemKey != "" {
		n++
	}
	return n
}
