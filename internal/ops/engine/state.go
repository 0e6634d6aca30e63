package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// The state: each kind's records and intents in its own buckets, as JSON
// of its own versioned forms (the record itself, or its frozen form:
// Record's MarshalJSON). Writing and reading them, and the errors that
// name what failed, are the engine's.

// stateSchema is the layout of the values in the state, stored in the
// state itself (see store.Open). A new layout gets a new version and a
// migration from the old one; a release refuses a layout it does not
// know rather than drop what it does not know.
//
// Version 2 added to an agent job's record its create's Idempotency-Key,
// request hash and first answer, and a bucket of create intents; version
// 3 its turns, follow-ups and submitter, and a bucket of follow-up
// intents; version 4 the deployments' buckets; version 5 the static
// exports'; version 6 the automations' and agent jobs of origin
// "automation". Every older version is read as it is (what it lacks is
// empty) and the state re-stamped "6". (A build of an unreleased branch
// stamped another layout "6"; no release wrote it, and this engine does
// not read its runs.)
const stateSchema = "6"

// olderSchemas are the versions this engine still reads.
var olderSchemas = []string{"1", "2", "3", "4", "5"}

// Encode is the state's value for v, a record or intent in its state
// form (a kind's own: an agent job's follow-up); what, project and id
// name it in the error.
func Encode(v any, what, project, id string) ([]byte, error) {
	return encodeState(v, what, project, id)
}

// encodeState is Encode.
func encodeState(v any, what, project, id string) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s/%s: %w", what, project, id, err)
	}
	return data, nil
}

// decodeState reads a state value into v, a record or intent: one
// without its project and id, or what its kind needs (valid), is
// unreadable rather than followed under an empty id.
func decodeState[V interface{ Valid() bool }](data []byte, what string, v V) (V, error) {
	if err := json.Unmarshal(data, v); err != nil {
		return v, fmt.Errorf("decoding %s: %w", what, err)
	}
	if !v.Valid() {
		return v, fmt.Errorf("decoding %s: no project, id, or what it needs", what)
	}
	return v, nil
}

// plainIntent is a value of a kind's Extra bucket as the engine reads it:
// its engine part alone.
type plainIntent struct{ IntentBase }

func (p *plainIntent) Valid() bool        { return p.whole() }
func (*plainIntent) Record(string) Record { return nil }

// decode reads one of the kind's records.
func (o *Ops) decode(data []byte) (Record, error) {
	return decodeRecord(o.kind, data, o.decl.What)
}

func decodeRecord(k Kind, data []byte, what string) (Record, error) {
	rec, err := decodeState(data, what, &wholeRecord{k.NewRecord()})
	return rec.Record, err
}

// wholeRecord is a record as decodeState checks it: its project and id,
// and Record.Valid.
type wholeRecord struct{ Record }

func (w *wholeRecord) Valid() bool {
	return w.Base().Project != "" && w.ID() != "" && w.Record.Valid()
}

func (w *wholeRecord) UnmarshalJSON(data []byte) error { return json.Unmarshal(data, w.Record) }

// decodeIntent reads one of the kind's intents.
func (o *Ops) decodeIntent(data []byte) (Intent, error) {
	return decodeIntent(o.kind, data, o.decl.Request+" intent")
}

func decodeIntent(k Kind, data []byte, what string) (Intent, error) {
	in, err := decodeState(data, what, &wholeIntent{k.NewIntent()})
	return in.Intent, err
}

type wholeIntent struct{ Intent }

func (w *wholeIntent) Valid() bool                     { return w.Base().whole() && w.Intent.Valid() }
func (w *wholeIntent) UnmarshalJSON(data []byte) error { return json.Unmarshal(data, w.Intent) }

// storeOptions are the state file's options for cfg.
func storeOptions(cfg *Config) store.Options {
	kinds := cfg.Kinds
	if kinds == nil {
		kinds = Kinds()
	}
	return store.Options{Schema: stateSchema, Upgrades: olderSchemas, Buckets: buckets(kinds),
		LockTimeout: cfg.LockTimeout, WriteTimeout: cfg.StateWriteTimeout, BeforeCommit: cfg.BeforeStateWrite}
}

// buckets are every kind's buckets beside store.Jobs (which every state
// has), in the registry's order.
func buckets(kinds []Kind) []string {
	var out []string
	for _, k := range kinds {
		d := k.Declare()
		for _, b := range append([]string{d.Records, d.Intents}, d.Extra...) {
			if b != store.Jobs {
				out = append(out, b)
			}
		}
	}
	return out
}

// Layout is the state's schema, the older schemas it still reads, and its
// buckets beside store.Jobs: what another store of the state (Redis) must
// stamp and hold.
func Layout() (schema string, upgrades, buckets []string) {
	o := storeOptions(&Config{})
	return o.Schema, o.Upgrades, o.Buckets
}

// CheckState reads the state file at path, without bbolt and without
// changing it, and reports what it holds and what is damaged.
func CheckState(path string) (*store.Report, error) {
	return store.Check(path, classify, pick)
}

// SalvageState copies every readable value of the state file at src into
// a new state file at dst, leaving src as it is. From a damaged file it
// also takes the values found only on pages the file's tree no longer
// reaches, for keys the tree lacks, choosing the most advanced version of
// a record found more than once. A value that is unreadable is rebuilt
// from its key where its kind can (Rebuilder).
func SalvageState(src, dst string) (*store.Report, error) {
	return store.Salvage(src, dst, storeOptions(&Config{LockTimeout: time.Second}), classify, pick, rebuild)
}

// Rebuilder is a kind whose unreadable values can be rebuilt from their
// key (project and id): state salvage writes what Rebuild makes (an
// agent job polled at once, a create of unknown outcome) instead of
// dropping them.
type Rebuilder interface {
	Rebuild(bucket, project, id string, now time.Time) ([]byte, bool)
}

func rebuild(bucket string, k []byte) ([]byte, bool) {
	project, id, ok := strings.Cut(string(k), "\x00")
	if !ok || project == "" || id == "" {
		return nil, false
	}
	for _, kind := range Kinds() {
		if r, ok := kind.(Rebuilder); ok && slices.Contains(append([]string{kind.Declare().Records, kind.Declare().Intents}, kind.Declare().Extra...), bucket) {
			return r.Rebuild(bucket, project, id, time.Now().UTC())
		}
	}
	return nil, false
}

// refuseUnreadable fails with a *store.DamagedError when a value of the
// state cannot be read, as state check reads it: whatever
// Idempotency-Keys it held cannot be told, so running on would make them
// reusable, and a retry with one start a second operation.
func (e *Engine) refuseUnreadable() error {
	st := e.store
	n, first := 0, ""
	for _, b := range append([]string{store.Jobs}, buckets(e.cfg.Kinds)...) {
		err := st.ForEachIn(b, func(k, v []byte) error {
			if _, ok := classifyIn(e.cfg.Kinds, b, k, v); !ok {
				if n++; first == "" {
					first = b + " " + strings.ReplaceAll(string(k), "\x00", "/")
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("state %s: reading: %w", st.Path(), err)
		}
	}
	if n == 0 {
		return nil
	}
	return &store.DamagedError{Path: st.Path(), Problem: fmt.Sprintf("%d unreadable record(s), first %s: the idempotency keys they hold cannot be told, "+
		"so a retry with one could start a second operation", n, first)}
}

func classify(bucket string, k, v []byte) (string, bool) { return classifyIn(Kinds(), bucket, k, v) }

// classifyIn keeps the values that decode as what their key and bucket
// say. Without a bucket (a page the tree no longer reaches) the buckets
// are tried in this order: every kind's records, then intents from the
// last kind to the first (an Extra bucket before its kind's intents): a
// kind's intent with fields of its own also has what an intent without
// any needs, so the most specific are tried first.
func classifyIn(kinds []Kind, bucket string, k, v []byte) (string, bool) {
	type form struct {
		bucket string
		is     func() bool
	}
	var records, intents []form
	for _, kind := range kinds {
		d := kind.Declare()
		records = append(records, form{d.Records, func() bool {
			rec, err := decodeRecord(kind, v, d.What)
			return err == nil && storeKey(rec.Base().Project, rec.ID()) == string(k)
		}})
		isIntent := func(in Intent) func() bool {
			return func() bool {
				in, err := decodeState(v, d.Request, &wholeIntent{in})
				return err == nil && storeKey(in.Base().Project, in.Base().ID) == string(k)
			}
		}
		mine := []form{{d.Intents, isIntent(kind.NewIntent())}}
		for _, x := range d.Extra {
			mine = append([]form{{x, isIntent(extra(kind, x))}}, mine...)
		}
		intents = append(mine, intents...)
	}
	for _, f := range append(records, intents...) {
		if (bucket == "" || bucket == f.bucket) && f.is() {
			return f.bucket, true
		}
		if bucket == f.bucket {
			return "", false
		}
	}
	return "", false
}

// pick prefers, of two versions of a record, the readable one, then the
// one that got further (Record.Reached: a version is only ever written
// after the ones it follows), else the first.
func pick(bucket string, a, b []byte) []byte {
	for _, kind := range Kinds() {
		if d := kind.Declare(); bucket == d.Records {
			ra, errA := decodeRecord(kind, a, d.What)
			rb, errB := decodeRecord(kind, b, d.What)
			switch {
			case errA != nil:
				return b
			case errB != nil:
				return a
			case rb.Reached() > ra.Reached():
				return b
			}
		}
	}
	return a
}

// DescribeCounts names per-bucket counts of a store.Report for a person:
// "7 jobs, 1 intents, 0 message_intents, ...", every bucket of every kind.
func DescribeCounts(m map[string]int) string {
	var parts []string
	for _, b := range append([]string{store.Jobs}, buckets(Kinds())...) {
		what := strings.ReplaceAll(b, "_", " ")
		if m[b] == 1 {
			what = strings.TrimSuffix(what, "s")
		}
		parts = append(parts, fmt.Sprintf("%d %s", m[b], what))
	}
	return strings.Join(parts, ", ")
}

// Classify and Pick are the state tools' tests of a value (the bucket it
// belongs in, when it decodes as what its key says) and their choice of
// the further of two versions of a record.
var (
	Classify = classify
	Pick     = pick
)
