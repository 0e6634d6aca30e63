package tracker

import "github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"

// stateSchema is the layout of the values in the state file, stored in the
// file itself (see store.Open). A new layout gets a new version and a
// migration from the old one.
//
// Version 2 adds to recordV1 the idempotency key of the create, the hash of
// its request and the status of its first answer, all omitted when empty,
// and a bucket of create intents (intentV2). A version 1 file is a version 2
// file without either, so it is read as it is and re-stamped "2" (which the
// release that wrote it then refuses, rather than drop what it does not
// know).
//
// Version 3 adds to the record the job's turns (turns, turnStartedAt), its
// follow-up messages (messageV3) and who submitted it (submittedBy), all
// omitted when empty, and a bucket
// of message intents (messageIntentV3). Versions 1 and 2 are read as they
// are (a job with one turn and no messages) and the file is re-stamped
// "3": a release that does not know turns refuses it rather than lose a
// turn in progress.
//
// Version 4 adds the deployments: a bucket of followed deployments
// (deployRecord) and one of trigger intents (deployIntent). Earlier
// versions are read as they are (no deployment), and the file is
// re-stamped "4": a release that does not know deployments refuses it
// rather than leave a deployment in progress unfollowed and uncounted.
//
// Version 5 adds the static exports: a bucket of followed exports
// (exportRecord) and one of start intents (exportIntent). Earlier
// versions are read as they are (no export) and re-stamped "5", for the
// same reason.
//
// Version 6 adds the automations: a bucket of automation runs
// (autoRecord) and one of their trigger intents (autoIntent), and agent
// jobs of origin "automation". Versions 1 to 5 are read as they are (no
// automation run) and re-stamped "6", for the same reason. (A build of an
// unreleased branch stamped another layout "6"; no release wrote it, and
// this tracker does not read its runs.)
const stateSchema = "6"

// olderSchemas are the versions this tracker still reads.
var olderSchemas = []string{"1", "2", "3", "4", "5"}

// The state's buckets beside store.Jobs (the agent jobs' records), of
// every kind, each keyed by storeKey(project, id): the kind's id upstream
// for its records, the intent's id for intents.
const (
	// bucketIntents and bucketMessageIntents hold the agent jobs' create
	// and message intents (versions 2 and 3).
	bucketIntents        = "intents"
	bucketMessageIntents = "message_intents"
	// bucketDeployments holds the followed deployments, bucketDeployIntents
	// their trigger intents (version 4).
	bucketDeployments   = "deployments"
	bucketDeployIntents = "deploy_intents"
	// bucketExports holds the followed static exports, bucketExportIntents
	// their start intents (version 5).
	bucketExports       = "static_exports"
	bucketExportIntents = "static_export_intents"
)

// storeOptions are the state file's options for the tracker.
// Layout is the state's schema, the older schemas it still reads, and its
// buckets beside store.Jobs: what another store of the state (Redis) must
// stamp and hold.
func Layout() (schema string, upgrades, buckets []string) {
	o := storeOptions(&Config{})
	return o.Schema, o.Upgrades, o.Buckets
}

func storeOptions(cfg *Config) store.Options {
	return store.Options{Schema: stateSchema, Upgrades: olderSchemas, Buckets: []string{bucketIntents, bucketMessageIntents, bucketDeployments, bucketDeployIntents,
		bucketExports, bucketExportIntents, bucketAutomations, bucketAutomationIntents},
		LockTimeout: cfg.LockTimeout, WriteTimeout: cfg.StateWriteTimeout, BeforeCommit: cfg.beforeStateWrite}
}
