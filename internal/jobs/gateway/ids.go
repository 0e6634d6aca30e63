package gateway

import (
	"net/http"

	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
)

// idParams are the path and query parameters of every kind's routes that
// carry an id: each is checked (bounded.CheckID) before a handler runs, so
// no route stores, logs, answers or sends an id of 10,000 characters, or
// one with a NUL or a newline.
var idParams = []struct{ name, what string }{
	{"id", "job id"},
	{"statusId", "status id"},
	{"intentId", "intent id"},
}

// badIDs answers 400 and reports true when a path value or the ?intent=
// of r is not an id any operation can have.
func badIDs(w http.ResponseWriter, r *http.Request) bool {
	for _, p := range idParams {
		if v := r.PathValue(p.name); v != "" {
			if err := bounded.CheckID(p.what, v); err != nil {
				writeError(w, http.StatusBadRequest, err.Error())
				return true
			}
		}
	}
	if r.URL.Query().Has("intent") {
		if err := bounded.CheckID("intent id", r.URL.Query().Get("intent")); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return true
		}
	}
	return false
}
