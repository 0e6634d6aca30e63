package tracker

import "github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"

// The kinds of operation the engine follows, as a registry: what every
// kind must declare to the engine's common parts (state buckets, the
// unknown-outcome path and its gauge, the handover of what a term could
// not save, its docs, and its part of the poll rounds and retention,
// kindEngine in engine.go). TestEveryKindIsWhole (gateway/kinds_test.go)
// and TestEveryKindHasAnEnginePart fail when a kind is half added. Each
// kind's own code is in the files named for it (kind_job*.go,
// kind_deployment*.go, kind_export*.go, kind_automation*.go): see docs/development.md, "Adding a kind of
// operation". This is the one place that names every kind.

// Kind is one kind of operation as the engine's common parts see it.
type Kind struct {
	// Name is the kind (Unsaved.Kind, the id key of its log lines).
	Name string
	// Records and Intents are its buckets in the state.
	Records, Intents string
	// UnknownGauge is the metric family of its outcomes unknown.
	UnknownGauge string
	// Doc is its page under docs/.
	Doc string
	// engine is its part of the engine's poll rounds and retention.
	engine func(*Tracker) kindEngine
	// state is what the state tools (check, salvage) read of an op kind's
	// buckets (its opSpec); nil for agent jobs, which check.go knows.
	state stateForms
}

// stateForms is what the state tools need of an op kind's buckets:
// whether a value is one of its records or intents under its own key
// (forms, by bucket), and which of two versions of a record got further.
type stateForms interface {
	forms() map[string]func(key, value []byte) bool
	pick(a, b []byte) []byte
}

// Kinds are the kinds the engine follows, in order.
func Kinds() []Kind {
	return []Kind{
		{Name: OpJob, Records: store.Jobs, Intents: createIntents.bucket, UnknownGauge: "mintlify_agent_create_unknown_outcomes", Doc: "agent-gateway.md",
			engine: func(s *Tracker) kindEngine { return jobKind{s} }},
		{Name: OpDeployment, Records: bucketDeployments, Intents: triggerIntents.bucket, UnknownGauge: "mintlify_deployment_unknown_outcomes", Doc: "deployments.md",
			engine: func(s *Tracker) kindEngine { return s.deployOps }, state: deploySpec},
		{Name: OpExport, Records: bucketExports, Intents: startIntents.bucket, UnknownGauge: "mintlify_static_export_unknown_outcomes", Doc: "static-exports.md",
			engine: func(s *Tracker) kindEngine { return s.exportOps }, state: exportSpec},
		{Name: OpAutomation, Records: bucketAutomations, Intents: automationIntents.bucket, UnknownGauge: "mintlify_automation_unknown_outcomes", Doc: "automations.md",
			engine: func(s *Tracker) kindEngine { return s.autoOps }, state: autoSpec},
	}
}
