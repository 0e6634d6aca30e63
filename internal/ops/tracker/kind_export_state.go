package tracker

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// The static exports' buckets of the state (schema version 5).
const (
	// bucketExports holds the followed exports (exportRecordV5), keyed by
	// storeKey(project, job id).
	bucketExports = "static_exports"
	// bucketExportIntents holds the start intents (exportIntentV5), keyed
	// by storeKey(project, intent id).
	bucketExportIntents = "static_export_intents"
)

// exportRecord is a followed static export; exportRecordV5 its form in the
// state. Every string from a client or the API is bounded when read.
type exportRecord struct {
	Project, ID string
	// Origin is OriginGateway or OriginTrack.
	Origin    string
	TrackedAt time.Time
	// Domain and Version are what the start asked for ("" when handed
	// over).
	Domain, Version string
	// Status, Progress (0-100) and Pages are the API's latest.
	Status   string
	Progress float64
	Pages    int64
	// CreatedAt and UpdatedAt are the API's (zero until it gives them).
	CreatedAt, UpdatedAt time.Time
	// Error is a failed export's message, bounded.
	Error string
	// BundleExpiresAt is when the last bundle made of it expires (its URL
	// is never kept: it is answered to the caller only).
	BundleExpiresAt time.Time
	// opState is when it ended, whether it was counted or lost, and its
	// start's Idempotency-Key, hash, answer and user.
	opState
}

// final reports whether the export will not change any more.
func (r *exportRecord) final() bool { return r.Lost || apiclient.IsStaticExportFinal(r.Status) }

// exportRecordV5 is the state's form of an export: the file format.
type exportRecordV5 struct {
	Project         string    `json:"project"`
	ID              string    `json:"exportJobId"`
	Origin          string    `json:"origin"`
	TrackedAt       time.Time `json:"trackedAt"`
	Domain          string    `json:"domain,omitempty"`
	Version         string    `json:"version,omitempty"`
	Status          string    `json:"status,omitempty"`
	Progress        float64   `json:"progress,omitempty"`
	Pages           int64     `json:"pageCount,omitempty"`
	CreatedAt       time.Time `json:"createdAt,omitzero"`
	UpdatedAt       time.Time `json:"updatedAt,omitzero"`
	Error           string    `json:"error,omitempty"`
	BundleExpiresAt time.Time `json:"bundleExpiresAt,omitzero"`
	opState
}

func encodeExportRecord(r *exportRecord) ([]byte, error) {
	return encodeState(exportRecordV5(*r), "static export", r.Project, r.ID)
}

func decodeExportRecord(data []byte) (exportRecord, error) {
	v, err := decodeState(data, "static export", func(v *exportRecordV5) bool {
		return v.Project != "" && v.ID != "" && v.Origin != ""
	}, "project, export job id or origin")
	return exportRecord(v), err
}

// exportIntent is a start intent: written before a start is sent,
// deleted with the export's first write or once the API's answer says
// nothing was started; one left is a start of unknown outcome. It is the
// engine's intent (intentV, whose methods it has) and the domain.
type exportIntent struct {
	intentV
	Domain string
	// inFlight: this process is sending it (not persisted).
	inFlight bool
}

// exportIntentV5 is the state's form of a start intent.
type exportIntentV5 struct {
	intentV
	Domain string `json:"exportDomain"`
}

func encodeExportIntent(in *exportIntent) ([]byte, error) {
	return encodeState(exportIntentV5{in.intentV, in.Domain}, "static export intent", in.Project, in.ID)
}

func decodeExportIntent(data []byte) (exportIntent, error) {
	v, err := decodeState(data, "static export intent", func(v *exportIntentV5) bool {
		return v.whole() && v.Domain != ""
	}, "id, project, domain or request hash")
	return exportIntent{intentV: v.intentV, Domain: v.Domain}, err
}

func (in *exportIntent) sending() bool { return in.inFlight }
func (in *exportIntent) sent()         { in.inFlight = false }

// pickExport prefers, of two versions of an export, the final one, then
// the one further along (pickRecord).
func pickExport(a, b []byte) []byte {
	return pickRecord(a, b, decodeExportRecord, func(r exportRecord) bool { return r.Counted || r.Lost },
		func(x, y exportRecord) bool { return y.Progress > x.Progress })
}

// exportRequestHash is the hash of a start's body, for its
// Idempotency-Key.
func exportRequestHash(b apiclient.StaticExportRequest) string {
	h := sha256.New()
	h.Write([]byte(b.Domain + "\x00" + b.Version))
	for _, p := range b.Paths {
		h.Write([]byte("\x00" + p))
	}
	return hex.EncodeToString(h.Sum(nil))
}
