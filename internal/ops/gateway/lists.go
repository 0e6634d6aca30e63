package gateway

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
)

// Reading and following operations of every kind: one, a project's list
// with its ?status= and ?limit=, track (with ?intent=, the settle of a
// start of unknown outcome), and the starts of unknown outcome.

// ServeOne answers the GET of one operation of any kind: its view, or 404
// saying how to follow one (notFollowed).
func ServeOne(w http.ResponseWriter, v any, ok bool, notFollowed string) {
	if !ok {
		WriteError(w, http.StatusNotFound, notFollowed)
		return
	}
	WriteJSON(w, http.StatusOK, v)
}

// ServeList answers the list of any kind (what names one): ?status= one
// of statuses (400 otherwise: a typo is refused rather than answered with
// an empty list that reads as "none in that status"), ?limit=, and views
// (newest first) of those of that status (statusOf), under key.
func ServeList[V any](w http.ResponseWriter, r *http.Request, what string, statuses []string, views []V, statusOf func(V) string, key string) {
	limit := -1
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			WriteError(w, http.StatusBadRequest, "limit must be a positive integer")
			return
		}
		limit = n
	}
	status := r.URL.Query().Get("status")
	if status != "" && !slices.Contains(statuses, status) {
		WriteError(w, http.StatusBadRequest, "status must be one of "+strings.Join(statuses, ", ")+
			" (a "+what+" in a status the API does not document is listed without ?status=)")
		return
	}
	list := slices.DeleteFunc(views, func(v V) bool { return status != "" && statusOf(v) != status })
	if limit >= 0 && len(list) > limit {
		list = list[:limit]
	}
	if list == nil {
		list = []V{} // an empty list is [], never null
	}
	WriteJSON(w, http.StatusOK, map[string][]V{key: list})
}

// FollowOrSettle is the track route of every kind: with ?intent= the
// operator settles an operation of unknown outcome with the id they found
// (settle, which gives the operation the intent's Idempotency-Key), without
// it an operation started elsewhere is followed (follow).
func FollowOrSettle[V any](intent string, settle, follow func() (V, engine.TrackResult, error)) (V, engine.TrackResult, error) {
	if intent != "" {
		return settle()
	}
	return follow()
}

// Tracked is how the track route of a kind answers (AnswerTrack): What
// names its operation ("static export"), Start its start ("static export
// start") and Unknown the route that lists those of unknown outcome, for
// the 404 of an intent id that is none; Failed answers the other errors
// (the kind's rules for its upstream, else Fail's).
type Tracked struct {
	What, Start, Unknown string
	Failed               func(w http.ResponseWriter, project string, err error)
}

// AnswerTrack answers the track route of any kind with FollowOrSettle's
// outcome: 201 for an operation newly followed (audit logs it), 200 for
// one followed already, 404 for an intent id that is no request of
// unknown outcome or an operation the API does not know, and the kind's
// answer (t.Failed) to any other error.
func AnswerTrack(w http.ResponseWriter, t Tracked, project string, v any, res engine.TrackResult, err error, audit func()) {
	switch {
	case err == nil:
	case errors.Is(err, engine.ErrNoSuchIntent):
		WriteError(w, http.StatusNotFound, "no "+t.Start+" of unknown outcome with this intent id (GET .../"+t.Unknown+" lists them)")
		return
	case apiclient.StatusCode(err) == http.StatusNotFound:
		WriteError(w, http.StatusNotFound, t.What+" not found upstream")
		return
	default:
		t.Failed(w, project, err)
		return
	}
	status := http.StatusOK
	if res == engine.NewlyTracked {
		status = http.StatusCreated
		audit()
	}
	WriteJSON(w, status, v)
}

// Unknown registers the two routes of a kind's starts of unknown outcome
// (path ends in their list's word, "unknown-triggers"; listed under key):
// GET path (UnknownList), DELETE path/{intentId} (UnknownDismiss), and,
// with allow, their 405s (a kind whose fallback patterns answer them
// leaves them out).
func (g *Gateway) Unknown(kind *engine.Decl, path, key string, allow bool) {
	g.Handle(kind, "GET "+path, g.UnknownList(kind, key))
	g.Handle(kind, "DELETE "+path+"/{intentId}", g.UnknownDismiss(kind))
	if allow {
		g.Allow(path, "GET, HEAD")
		g.Allow(path+"/{intentId}", "DELETE")
	}
}

// UnknownList lists a project's starts of unknown outcome of kind, oldest
// first, under key, for an operator to find in the platform's dashboard
// and then settle (track?intent=) or dismiss.
func (g *Gateway) UnknownList(kind *engine.Decl, key string) func(w http.ResponseWriter, r *http.Request, project string) {
	o := g.engine.Ops(kind.Name)
	return func(w http.ResponseWriter, _ *http.Request, project string) {
		list := []any{}
		for _, in := range o.Unknown(project) {
			list = append(list, engine.Listed(in))
		}
		WriteJSON(w, http.StatusOK, map[string][]any{key: list})
	}
}

// UnknownDismiss dismisses a start of unknown outcome of kind
// ({intentId}): the operator found that it started nothing, and its
// Idempotency-Key is free again (204; 404 for an intent id that is none;
// 500 when the state could not be written).
func (g *Gateway) UnknownDismiss(kind *engine.Decl) func(w http.ResponseWriter, r *http.Request, project string) {
	o := g.engine.Ops(kind.Name)
	return func(w http.ResponseWriter, r *http.Request, project string) {
		switch err := o.Dismiss(project, r.PathValue("intentId")); {
		case errors.Is(err, engine.ErrNoSuchIntent):
			WriteError(w, http.StatusNotFound, "no "+kind.Request+" of unknown outcome with this intent id")
		case err != nil:
			level.Error(g.logger).Log("msg", "dismissing a "+kind.Request+" of unknown outcome", "project", project, "err", err)
			WriteError(w, http.StatusInternalServerError, err.Error())
		default:
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusNoContent)
		}
	}
}
