package tracker

import (
	"fmt"
	"strings"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
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
// advanced version of a job found more than once. A job or create intent
// whose value is unreadable is rebuilt from its key (rebuild).
func SalvageState(src, dst string) (*store.Report, error) {
	return store.Salvage(src, dst, storeOptions(&Config{LockTimeout: time.Second}), classify, pick, rebuild)
}

// statusUnread is the status of a job rebuilt from its id by
// SalvageState, until its first poll reads it.
const statusUnread = "unread"

// rebuild makes what can be made of an unreadable value from its key
// (project and id): a job, polled at once (its first poll is taken as a
// sighting after the fact: nothing it shows is counted), or a create of
// unknown outcome for an operator to resolve. What the value held beside
// its key is lost, idempotency keys included: the job is marked rebuilt,
// which the job's view and mintlify_agent_state_unreadable_records show.
// An unreadable message intent is dropped: it names its job only in its
// value.
func rebuild(bucket string, k []byte) ([]byte, bool) {
	project, id, ok := strings.Cut(string(k), "\x00")
	if !ok || project == "" || id == "" {
		return nil, false
	}
	now := time.Now().UTC()
	var data []byte
	var err error
	switch bucket {
	case store.Jobs:
		data, err = encodeRecord(&record{Project: project, Job: apiclient.Job{ID: id, Status: statusUnread}, Origin: OriginTrack, TrackedAt: now, Rebuilt: true})
	case bucketIntents:
		data, err = encodeIntent(&intentRecord{ID: id, Project: project, RequestHash: "unreadable",
			PromptExcerpt: "(unreadable: rebuilt by state salvage)", StartedAt: now})
	default:
		return nil, false
	}
	return data, err == nil
}

// refuseUnreadable fails with a *store.DamagedError when a value of the
// state file cannot be read, as state check reads it: whatever
// idempotency keys it held (a job's, a create's, a follow-up's) cannot be
// told, so running on would make them reusable, and a retry with one
// create a second job.
func refuseUnreadable(st stateStore) error {
	n, first := 0, ""
	for _, b := range append([]string{store.Jobs}, storeOptions(&Config{}).Buckets...) {
		err := st.ForEachIn(b, func(k, v []byte) error {
			if _, ok := classify(b, k, v); !ok {
				if n++; first == "" {
					first = b + " " + strings.ReplaceAll(string(k), "\x00", "/")
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("agent state file %s: reading: %w", st.Path(), err)
		}
	}
	if n == 0 {
		return nil
	}
	return &store.DamagedError{Path: st.Path(), Problem: fmt.Sprintf("%d unreadable record(s), first %s: the idempotency keys they hold cannot be told, "+
		"so a retry with one could create a second job", n, first)}
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
	tests := map[string]func() bool{store.Jobs: isJob, bucketIntents: isIntent, bucketMessageIntents: isMessageIntent}
	records, intents := []string{}, []string{}
	for _, kind := range Kinds() {
		if kind.state == nil {
			continue
		}
		for b, is := range kind.state.forms() {
			tests[b] = func() bool { return is(k, v) }
		}
		records, intents = append(records, kind.Records), append(intents, kind.Intents)
	}
	if bucket != "" {
		if is, ok := tests[bucket]; ok {
			return bucket, is()
		}
		return "", false
	}
	// Without a bucket (a page the tree no longer reaches), in this order:
	// an op kind's intent and a message intent also have what a create
	// intent needs, so they are tried first.
	order := append(append(append([]string{store.Jobs}, records...), intents...), bucketMessageIntents, bucketIntents)
	for _, b := range order {
		if tests[b]() {
			return b, true
		}
	}
	return "", false
}

// pick prefers, of two versions of a job or a deployment, the one that
// got further: a version is only ever written after the ones it follows.
func pick(bucket string, a, b []byte) []byte {
	for _, kind := range Kinds() {
		if kind.state != nil && bucket == kind.Records {
			return kind.state.pick(a, b)
		}
	}
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

// DescribeCounts names per-bucket counts of a store.Report for a person:
// "7 jobs, 1 create intent and 0 message intents".
func DescribeCounts(m map[string]int) string {
	n := func(b, one, many string) string {
		if m[b] == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %s", m[b], many)
	}
	return n(store.Jobs, "job", "jobs") + ", " + n(bucketIntents, "create intent", "create intents") + " and " +
		n(bucketMessageIntents, "message intent", "message intents")
}
