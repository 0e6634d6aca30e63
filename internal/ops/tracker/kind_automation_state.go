package tracker

// The automations' buckets of the state (schema version 6).
const (
	// bucketAutomations holds the automation runs triggered or handed
	// over (autoRecord), keyed by storeKey(project, run id).
	bucketAutomations = "automations"
	// bucketAutomationIntents holds the automation trigger intents
	// (autoIntent), keyed by storeKey(project, intent id).
	bucketAutomationIntents = "automation_intents"
)

// How an automation run is followed: its record's status (opState).
const (
	// FollowPending: triggered, get-job has not answered for its jobId yet.
	FollowPending = "pending"
	// FollowAgentJob: get-job knows its jobId: the run is followed as an
	// agent job (the job kind's record, origin automation) to its end.
	FollowAgentJob = "agent_job"
	// FollowNone: not followed: the API answered no jobId, or get-job
	// answered 404 for it repeatedly (a background job, not an agent job).
	FollowNone = "not_followed"
)

// autoFollows are the final follow values, in label order.
var autoFollows = []string{FollowAgentJob, FollowNone}

// autoRecord is an automation run: its own state form (version 6), the
// run's ids and the engine's part (opState), whose status is how the run
// is followed (FollowPending, FollowAgentJob or FollowNone), final once
// get-job has answered (counted once, written with it).
type autoRecord struct {
	// ID is the run's id: its jobId, else its instanceId, else the id of
	// the trigger's intent (the API answered neither).
	ID string `json:"runId"`
	// Automation is the API's workflowSchemaId (schemaId).
	Automation string `json:"automation"`
	// JobID ("" when the API answered none) and InstanceID, the trigger's.
	JobID      string `json:"jobId,omitempty"`
	InstanceID string `json:"instanceId,omitempty"`
	opState
}

// final reports whether get-job has answered for the run (or never can).
func (r *autoRecord) final() bool {
	return r.Lost || r.Status == FollowAgentJob || r.Status == FollowNone
}

// The run's part of opRecord: its id, and its automation and follow value.
func (r *autoRecord) opID() string { return r.ID }
func (r *autoRecord) valid() bool {
	return r.Automation != "" && (r.Status == FollowPending || r.Status == FollowAgentJob || r.Status == FollowNone)
}

// autoIntent is an automation trigger intent: written before the trigger
// is sent, deleted in the write of its run. One left after a restart is
// a trigger of unknown outcome. It is its own state form (version 6): the
// engine's intent (opIntent) and the automation.
type autoIntent struct {
	opIntent
	Automation string `json:"automation"`
}

// UnknownAutomationTrigger is an automation trigger of unknown outcome,
// as listed to operators: the engine's listing and the automation.
type UnknownAutomationTrigger struct {
	UnknownIntent
	Automation string `json:"automation"`
}

// listed is in as listed to operators.
func (in *autoIntent) listed() UnknownAutomationTrigger {
	return UnknownAutomationTrigger{UnknownIntent: unknownOf(&in.opIntent), Automation: in.Automation}
}

// runCodec reads and writes the trigger intents.
var runCodec = opIntentCodec[autoIntent, *autoIntent]{what: "automation intent", missing: "automation",
	valid: func(in *autoIntent) bool { return in.Automation != "" }}
