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
