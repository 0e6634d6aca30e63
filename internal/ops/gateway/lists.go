package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/tracker"
)

// Reading operations of every kind: one, a project's list, their
// ?status= and ?limit=.

// The values each kind's list takes as ?status=: the statuses the API
// documents and the exporter's own lost. Anything else is a typo, answered
// 400 rather than an empty list that reads as "none in that status".
var (
	listStatuses = []string{apiclient.StatusActive, apiclient.StatusCompleted, apiclient.StatusFailed,
		apiclient.StatusArchived, tracker.StatusLost}
	deploymentListStatuses = []string{apiclient.DeploymentQueued, apiclient.DeploymentInProgress, apiclient.DeploymentSuccess,
		apiclient.DeploymentFailure, tracker.StatusLost}
)

// serveOne answers the GET of one operation of any kind: its view, or 404
// saying how to follow one (notFollowed).
func serveOne[V any](w http.ResponseWriter, v V, ok bool, notFollowed string) {
	if !ok {
		writeError(w, http.StatusNotFound, notFollowed)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// serveList answers the list of any kind (what names one): ?status= one
// of statuses (400 otherwise), ?limit=, and read's operations, newest
// first, wrapped in the kind's body.
func serveList[V any](w http.ResponseWriter, r *http.Request, what string, statuses []string, read func(status string) []V, body func([]V) any) {
	limit, ok := listLimit(w, r)
	if !ok {
		return
	}
	status, ok := listStatus(w, r, statuses, what)
	if !ok {
		return
	}
	list := read(status)
	if limit >= 0 && len(list) > limit {
		list = list[:limit]
	}
	if list == nil {
		list = []V{}
	}
	writeJSON(w, http.StatusOK, body(list))
}

// listStatus reads a list's ?status= ("" without one), answering 400
// itself when it is none of allowed: every kind's list takes it, and a
// typo is refused rather than answered with an empty list that reads as
// "none in that status" (or, as the deployments' list once did, ignored).
func listStatus(w http.ResponseWriter, r *http.Request, allowed []string, what string) (string, bool) {
	status := r.URL.Query().Get("status")
	if status != "" && !slices.Contains(allowed, status) {
		writeError(w, http.StatusBadRequest, "status must be one of "+strings.Join(allowed, ", ")+
			" (a "+what+" in a status the API does not document is listed without ?status=)")
		return "", false
	}
	return status, true
}

// listLimit reads a list's ?limit= (-1 without one), answering 400 itself
// when it is not a positive integer.
func listLimit(w http.ResponseWriter, r *http.Request) (int, bool) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return -1, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		writeError(w, http.StatusBadRequest, "limit must be a positive integer")
		return 0, false
	}
	return n, true
}

// followOrSettle is the track route of every kind: with ?intent= the
// operator settles an operation of unknown outcome with the id they found
// (settle, which gives the operation the intent's Idempotency-Key), without
// it an operation started elsewhere is followed (follow).
func followOrSettle[V any](intent string, settle, follow func() (V, tracker.TrackResult, error)) (V, tracker.TrackResult, error) {
	if intent != "" {
		return settle()
	}
	return follow()
}

// readBody reads the body of a route of any kind into v: a JSON object
// (an empty body too when emptyOK), at most limit bytes.
func readBody(w http.ResponseWriter, r *http.Request, v any, emptyOK bool, limit int64) *badRequest {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &badRequest{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request too large: the body may be at most %d bytes", limit)}
		}
		return badBody("reading the request body failed")
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		if emptyOK {
			return nil
		}
		return badBody("request body is empty: want a JSON object")
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if !strings.HasPrefix(strings.TrimSpace(string(data)), "{") {
		if json.Valid(data) { // [1], "x", null: JSON, but not an object
			return badBody("expected a JSON object")
		}
		return badBody("malformed JSON: want a JSON object")
	}
	if dec.Decode(v) != nil {
		return badBody("malformed JSON: want a JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badBody("malformed JSON: unexpected data after the request object")
	}
	return nil
}

// startHeaders checks the headers of a request of any kind that starts an
// operation: a JSON body, and the Idempotency-Key if any (key, "" without
// one). It answers 415 or 400 itself, and ok is false.
func startHeaders(w http.ResponseWriter, r *http.Request) (key string, ok bool) {
	if !jsonContentType(r) {
		writeError(w, http.StatusUnsupportedMediaType, contentTypeMsg)
		return "", false
	}
	key, err := IdempotencyKey(r.Header)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return "", false
	}
	return key, true
}

// unknownRoutes are the two routes of every kind's requests of unknown
// outcome (start names one, "create"): GET lists a project's, oldest
// first, in the kind's body, for an operator to find in the platform's
// dashboard and then settle (track?intent=) or dismiss; DELETE dismisses
// one (dismissUnknown): the operator found that it started nothing, and
// its Idempotency-Key is free again.
func unknownRoutes[L any](g *Gateway, start string, list func(project string) []L, body func([]L) any,
	dismiss func(project, id string) error) (get, del func(http.ResponseWriter, *http.Request, string)) {
	get = func(w http.ResponseWriter, _ *http.Request, project string) {
		writeJSON(w, http.StatusOK, body(list(project)))
	}
	del = func(w http.ResponseWriter, r *http.Request, project string) {
		g.dismissUnknown(w, r, project, start, dismiss)
	}
	return get, del
}

// tracked is how the track route of a kind answers (answerTrack): what
// names its operation ("static export"), start its start ("static export
// start") and unknown the route that lists those of unknown outcome, for
// the 404 of an intent id that is none; failed answers the other errors
// (the kind's rules for its upstream, else upstreamAnswer's).
type tracked struct {
	what, start, unknown string
	failed               func(w http.ResponseWriter, project string, err error)
}

// answerTrack answers the track route of any kind with followOrSettle's
// outcome: 201 for an operation newly followed (audit logs it), 200 for
// one followed already, 404 for an intent id that is no request of
// unknown outcome or an operation the API does not know, and the kind's
// answer (t.failed) to any other error.
func answerTrack[V any](w http.ResponseWriter, t tracked, project string, v V, res tracker.TrackResult, err error, audit func()) {
	switch {
	case err == nil:
	case errors.Is(err, tracker.ErrNoSuchIntent):
		writeError(w, http.StatusNotFound, "no "+t.start+" of unknown outcome with this intent id (GET .../"+t.unknown+" lists them)")
		return
	case apiclient.StatusCode(err) == http.StatusNotFound:
		writeError(w, http.StatusNotFound, t.what+" not found upstream")
		return
	default:
		t.failed(w, project, err)
		return
	}
	status := http.StatusOK
	if res == tracker.NewlyTracked {
		status = http.StatusCreated
		audit()
	}
	writeJSON(w, status, v)
}

// answerFailed is upstreamAnswer's answer to a failed call op (a failed
// answer of tracked).
func (g *Gateway) answerFailed(op string) func(w http.ResponseWriter, project string, err error) {
	return func(w http.ResponseWriter, project string, err error) {
		a := g.upstreamAnswer(w, project, op, err)
		writeError(w, a.status, a.msg)
	}
}
