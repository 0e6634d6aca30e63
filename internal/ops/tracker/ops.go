package tracker

import "context"

// Ops is what the routes of every op kind (deployments, static exports)
// ask of the engine, the same for each: one followed operation (V, its
// view) and a project's list, and the starts of unknown outcome (L, as
// the kind lists one) listed, dismissed or resolved with the operation an
// operator found they started. A kind's own calls (its start, its track,
// a bundle) are the Tracker's methods named for it.
type Ops[V, L any] interface {
	// One is project's followed operation id.
	One(project, id string) (V, bool)
	// List is a project's followed operations, newest first (tracked,
	// then id).
	List(project string) []V
	// Unknown lists project's starts of unknown outcome, oldest first
	// (those under way are not listed).
	Unknown(project string) []L
	// Dismiss deletes a start of unknown outcome: the operator found that
	// nothing was started (or gives it up). Its Idempotency-Key is free
	// again.
	Dismiss(project, intentID string) error
	// Resolve settles a start of unknown outcome with the operation id
	// the operator found it started: followed as one started here (its
	// final status counted even when it is final at this first read),
	// given the start's Idempotency-Key, so that a retry with the key is
	// answered with it, and the intent deleted, in one write.
	Resolve(ctx context.Context, project, intentID, id string) (V, TrackResult, error)
}

// opRoutes is the engine's Ops of the op kind k, whose starts of unknown
// outcome are listed as listed makes them.
type opRoutes[R comparable, P opRecord[R, V], V any, I pending, L any] struct {
	k      *opKind[R, P, V, I]
	listed func(in I) L
}

// routesOf is the Ops of k.
func routesOf[R comparable, P opRecord[R, V], V any, I pending, L any](k *opKind[R, P, V, I], listed func(in I) L) Ops[V, L] {
	return opRoutes[R, P, V, I, L]{k: k, listed: listed}
}

func (o opRoutes[R, P, V, I, L]) One(project, id string) (V, bool) {
	return o.k.one(storeKey(project, id))
}
func (o opRoutes[R, P, V, I, L]) List(project string) []V { return o.k.list(project) }
func (o opRoutes[R, P, V, I, L]) Unknown(project string) []L {
	return unknownIntents(o.k.s, o.k.intents, project, o.listed)
}
func (o opRoutes[R, P, V, I, L]) Dismiss(project, intentID string) error {
	return dismissIntent(o.k.s, o.k.intents, project, intentID)
}
func (o opRoutes[R, P, V, I, L]) Resolve(ctx context.Context, project, intentID, id string) (V, TrackResult, error) {
	return o.k.resolve(ctx, project, intentID, id)
}
