package tracker

import (
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// exportRecord is a followed static export: its own state form (version
// 5), the export's fields and the engine's part (opState). Every string
// from a client or the API is bounded when read.
type exportRecord struct {
	ID string `json:"exportJobId"`
	// Domain and Version are what the start asked for ("" when handed
	// over).
	Domain  string `json:"domain,omitempty"`
	Version string `json:"version,omitempty"`
	// Progress (0-100) and Pages are the API's latest, UpdatedAt its last
	// update (zero until it gives it).
	Progress  float64   `json:"progress,omitempty"`
	Pages     int64     `json:"pageCount,omitempty"`
	UpdatedAt time.Time `json:"updatedAt,omitzero"`
	// Error is a failed export's message, bounded.
	Error string `json:"error,omitempty"`
	// BundleExpiresAt is when the last bundle made of it expires (its URL
	// is never kept: it is answered to the caller only).
	BundleExpiresAt time.Time `json:"bundleExpiresAt,omitzero"`
	opState
}

// final reports whether the export will not change any more.
func (r *exportRecord) final() bool { return r.Lost || apiclient.IsStaticExportFinal(r.Status) }

// The export's part of opRecord: its id, and an origin (every export
// written has one).
func (r *exportRecord) opID() string { return r.ID }
func (r *exportRecord) valid() bool  { return r.Origin != "" }

// exportIntent is a start intent: written before a start is sent,
// deleted with the export's first write or once the API's answer says
// nothing was started; one left is a start of unknown outcome. It is its
// own state form (version 5): the engine's intent (opIntent) and the
// domain.
type exportIntent struct {
	opIntent
	Domain string `json:"exportDomain"`
}

// startCodec reads and writes the start intents.
var startCodec = opIntentCodec[exportIntent, *exportIntent]{what: "static export intent", missing: "domain",
	valid: func(in *exportIntent) bool { return in.Domain != "" }}
