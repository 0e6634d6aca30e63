package leader

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
)

// Handing over what a term could not save (issue 36, 4.1). A term that
// loses its lease while Redis stalls may hold operations the API
// acknowledged (a job created, a deployment triggered) whose record it
// could not write: its writes are fenced once the lease is gone, so it can
// no longer save them itself, and the next holder only finds their intent,
// an outcome it does not know. The leader keeps them and, on every tick,
// sends each to the replica running the gateway (itself included) as the
// request an operator would send for an outcome found (track with
// ?intent=): the operation is then followed to its end, counted once, and
// its Idempotency-Key answered with it, whichever replica holds the
// gateway. Until then a retry with the key is answered 409 (never sent
// again).

// handoffTimeout bounds one handover: one read upstream and one write.
const handoffTimeout = 30 * time.Second

// keepHandoffs adds the operations an ended term could not save.
func (l *Leader) keepHandoffs(us []engine.Unsaved) {
	for _, u := range us {
		level.Warn(l.opts.Logger).Log("msg", "an operation acknowledged upstream was not saved before this replica stopped running the gateway: handing it to the replica that runs it",
			"kind", u.Kind, "project", u.Project, u.Kind, u.ID, "intent", u.Intent)
	}
	l.handoffs = append(l.handoffs, us...)
}

// deliverHandoffs sends every kept operation to the gateway; those that
// cannot be delivered now (no replica runs it, Redis unreachable: 5xx or
// 429) are kept for the next tick, the others are done.
func (l *Leader) deliverHandoffs(ctx context.Context) {
	l.handoffs = slices.DeleteFunc(l.handoffs, func(u engine.Unsaved) bool {
		return ctx.Err() == nil && l.handOver(ctx, u)
	})
}

// handOver sends u once and reports whether it is done with: taken over
// (2xx), or refused for good (4xx: its intent settled or dismissed
// already, or the API does not know the id; an operator sees the intent
// under unknown outcomes if it is still there).
func (l *Leader) handOver(ctx context.Context, u engine.Unsaved) bool {
	hctx, cancel := context.WithTimeout(ctx, handoffTimeout)
	defer cancel()
	req, err := gateway.HandoffRequest(hctx, u)
	if err != nil {
		level.Error(l.opts.Logger).Log("msg", "cannot hand over an operation", "err", err)
		return true
	}
	w := &statusWriter{header: http.Header{}}
	l.ServeHTTP(w, req)
	switch code := w.status(); {
	case code >= 200 && code < 300:
		level.Info(l.opts.Logger).Log("msg", "operation handed over to the replica running the gateway: followed there", "kind", u.Kind, "project", u.Project, u.Kind, u.ID)
		return true
	case code >= 400 && code < 500 && code != http.StatusTooManyRequests && code != http.StatusRequestTimeout:
		level.Error(l.opts.Logger).Log("msg", "the gateway refused the handover of an operation: settle its intent by hand (unknown outcomes)",
			"kind", u.Kind, "project", u.Project, u.Kind, u.ID, "intent", u.Intent, "status", code)
		return true
	default:
		level.Debug(l.opts.Logger).Log("msg", "handover not possible now; retried", "kind", u.Kind, "project", u.Project, u.Kind, u.ID, "status", code)
		return false
	}
}

// statusWriter is the http.ResponseWriter of a handover: it keeps the
// status and drops the body (the view of the operation).
type statusWriter struct {
	header http.Header
	code   int
}

func (w *statusWriter) Header() http.Header { return w.header }

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}

func (w *statusWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}
