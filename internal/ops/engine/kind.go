package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
)

// Kind is a kind of operation the engine follows: a plug-in, as
// mysqld_exporter's Scraper is one, behind named methods. Each kind's
// package (internal/ops/kinds/NAME) registers one value (Register); the
// engine, the gateway, the status page, the configuration and the wiring
// loop over the registry and never name a kind.
//
// The registered value is a prototype: Declare and Open are called on it.
// Open makes the kind's part of one engine, which the engine calls for
// the rest (reading its operations, counting and exporting them).
type Kind interface {
	// Declare says what the kind is: names, buckets, routes and settings,
	// plain data the same for every engine.
	Declare() *Decl
	// Open is the kind's part of an engine: a new Kind bound to ops (its
	// operations, and the engine's parts it uses), with its own metric
	// families (prometheus.Collector).
	Open(ops *Ops) Kind
	// NewRecord and NewIntent are empty ones, to read the state into.
	NewRecord() Record
	NewIntent() Intent
	// Read reads the operation rec upstream (ctx bounds it), seen how;
	// the engine applies what it read to the latest record (Record.Saw).
	Read(ctx context.Context, rec Record, how Sighting) (any, error)
	// Count counts ev, the event of a change of rec just written, under
	// the lock that shows the change (whoever reads rec final reads it
	// counted), and returns its log line (nil: none), which the engine
	// logs once the change is shown.
	Count(rec Record, ev Event) (log []any)
	// Series pre-creates (add) or deletes the series of projects.
	Series(projects []string, add bool)
	prometheus.Collector
}

// Record is a followed operation's record, of any kind: a pointer to the
// kind's struct, which embeds Op (the engine's part, whose fields its
// JSON holds) and is its own state form (or converts to its frozen form
// in MarshalJSON and UnmarshalJSON). The engine works on copies (Clone):
// a change is derived from the record in memory, written, and only then
// shown.
type Record interface {
	// Base is the engine's part (the embedded Op's method).
	Base() *Op
	// ID is its id upstream.
	ID() string
	// Valid reports whether a record read from the state has what the
	// kind needs beside its project and id.
	Valid() bool
	// Final: it will not change any more (kept until Retention).
	Final() bool
	// Polled reports whether it is still read at now: not final, or
	// watched (a completed agent job, for a later archive).
	Polled(now time.Time, cfg *Config) bool
	// Saw applies what Kind.Read read, at at, in a round started at
	// roundStart (a handover: at), seen how; it returns the event to
	// count and whether the record changed.
	Saw(read any, at, roundStart time.Time, how Sighting) (ev Event, changed bool)
	// Next is when to read it next after a read at at (zero: the next
	// round; not Polled: never).
	Next(at, roundStart time.Time, cfg *Config) time.Time
	// Missing is what the n-th 404 in a row, at at, makes of it: the event
	// to count, and whether it changed (to be written). Op's: lost at the
	// LostAfter404s-th.
	Missing(n int, at time.Time) (ev Event, changed bool)
	// Keys are the Idempotency-Keys it answers beside its start's
	// (Op.IdemKey): an agent job's follow-ups'. Op's: none.
	Keys() []string
	// Reached says how far it got, for state salvage to keep the further
	// of two versions. Op's: final or lost, else nothing.
	Reached() int
	// Clone is a copy to derive a change on.
	Clone() Record
}

// Intent is a start's intent, of any kind: a pointer to the kind's
// struct, which embeds IntentBase and is its own state form.
type Intent interface {
	// Base is the engine's part (the embedded IntentBase's method).
	Base() *IntentBase
	// Valid reports whether an intent read from the state has what the
	// kind needs beside the engine's part.
	Valid() bool
	// Record is the record, before its first read, of the operation id
	// an operator found this start started (a settle): the start's
	// fields in it.
	Record(id string) Record
}

// Decl is what a kind declares of itself: plain data.
type Decl struct {
	// Order places the kind among the others (the order of the state's
	// buckets, the metrics, the routes and the status page).
	Order int
	// Name is the kind (Unsaved.Kind, the kind label of the engine's
	// series, the configuration's name of it); What names one operation
	// in logs and errors ("static export"), Request its start ("static
	// export start"); IDKey is the key of its id in log lines, IDName what
	// its id is called ("job id").
	Name, What, Request, IDKey, IDName string
	// Records and Intents are its buckets in the state; Extra are other
	// buckets it keeps there (their values are intents: IntentBase).
	Records, Intents string
	Extra            []string
	// IntentPrefix starts its intents' ids ("di_").
	IntentPrefix string
	// ReadEndpoint is the apiclient endpoint a read goes to (its
	// Retry-After pauses the reads).
	ReadEndpoint string
	// OrgWide: the API's ids are the organization's, not a project's (its
	// paths name no project), so one id is followed for one project only.
	OrgWide bool
	// SettleGone: a settle the API answers 404 for is recorded as
	// Record.Missing makes it (automations: a run that is no agent job),
	// not refused.
	SettleGone bool
	// Settle says how an operator settles a start of unknown outcome: a
	// format of the project (%[1]s) and the intent (%[2]s).
	Settle string
	// UnknownGauge is the metric family of its outcomes unknown; Doc its
	// page under docs/.
	UnknownGauge, Doc string
	// Routes are where the gateway serves it.
	Routes Routes
	// Setting is its key in a project of the configuration.
	Setting Setting
}

// Setting and IDList are a kind's key in the configuration (which the
// engine declares to it: Register), for the kinds' declarations.
type (
	Setting = config.KindSetting
	IDList  = config.IDList
)

// Routes are where the gateway serves a kind (the kind's package
// registers the handlers): what the gateway, the status page and the
// handover of an unsaved operation need to know of them.
type Routes struct {
	// Prefix is the path every route of the kind starts with.
	Prefix string
	// Track is the path of the track route of an operation, a format of
	// the project (%[1]s) and its id (%[2]s); List and Unknown the paths
	// of a project's list and of its starts of unknown outcome (%[1]s).
	Track, List, Unknown string
	// Flag turns the routes on (without "--"), Help is its help.
	Flag, Help string
	// Title names the kind's operations on the status page
	// ("Deployments").
	Title string
	// StartLimit, when set, is the kind's local limit of starts per
	// project in any hour (gateway.Gateway.StartLimit), for an API that
	// documents none: a loop in CI must not flood it.
	StartLimit *StartLimit
}

// StartLimit is a kind's local limit of starts per project in any hour:
// the flag that sets it (without "--"), its help, and its default.
type StartLimit struct {
	Flag, Help string
	PerHour    int
}

// registered are the kinds, by Order.
var registered []Kind

// Register adds a kind to the registry, and its setting to the
// configuration's keys (config.RegisterKind); a name or order given twice
// is a programming error. Kinds register while their package initialises.
func Register(k Kind) {
	d := k.Declare()
	for _, o := range registered {
		if od := o.Declare(); od.Name == d.Name || od.Order == d.Order {
			panic(fmt.Sprintf("engine: kind %s registered beside %s with the same name or order", d.Name, od.Name))
		}
	}
	at, _ := slices.BinarySearchFunc(registered, d.Order, func(o Kind, order int) int { return cmp.Compare(o.Declare().Order, order) })
	registered = slices.Insert(registered, at, k)
	s := d.Setting
	s.Kind, s.Order = d.Name, d.Order
	config.RegisterKind(s)
}

// Kinds are the registered kinds, in order.
func Kinds() []Kind { return slices.Clone(registered) }

// Lookup is the registered kind called name.
func Lookup(name string) (Kind, bool) {
	i := slices.IndexFunc(registered, func(k Kind) bool { return k.Declare().Name == name })
	if i < 0 {
		return nil, false
	}
	return registered[i], true
}
