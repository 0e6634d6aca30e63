package tracker

// Deployment triggers of unknown outcome: seen, listed and settled through
// the engine's intents, as every kind's. Issue 36 (4.2): after a kill -9
// during a trigger, only a start log line said so, and its Idempotency-Key
// answered 409 for the whole retention.

// UnknownTrigger is a deployment trigger whose outcome is unknown, as
// listed to operators: the engine's listing and the deployment's kind.
type UnknownTrigger struct {
	UnknownIntent
	Kind string `json:"kind"`
}

// DeploymentOps is the engine's part of the deployment routes: the
// followed deployments, and the triggers of unknown outcome (settled as
// TrackDeployment follows, of the trigger's kind).
func (s *Tracker) DeploymentOps() Ops[DeploymentView, UnknownTrigger] {
	return routesOf(s.deployOps, func(in *deployIntent) UnknownTrigger { return UnknownTrigger{unknownOf(&in.opIntent), in.Kind} })
}
