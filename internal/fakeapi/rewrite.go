package fakeapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// Faults that rewrite a successful answer after its handler wrote it: the
// answers the reference allows but a reader may not expect. Each one is
// applied to the JSON as a whole, so that it holds on every endpoint
// without an edit to its handler.

// rewrites reports whether f rewrites answers.
func (f Fault) rewrites() bool { return f.FractionalCounts || f.CursorURL }

// rewriteWriter holds an answer until its handler is done.
type rewriteWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *rewriteWriter) Header() http.Header         { return w.header }
func (w *rewriteWriter) WriteHeader(status int)      { w.status = status }
func (w *rewriteWriter) Write(b []byte) (int, error) { return w.body.Write(b) }

// serveRewritten runs h and writes its answer with f's rewrites applied
// when it is a 200 in JSON (an error answer goes out as it was).
func serveRewritten(w http.ResponseWriter, r *http.Request, f Fault, h func(w http.ResponseWriter)) {
	rw := &rewriteWriter{header: http.Header{}, status: http.StatusOK}
	h(rw)
	body := rw.body.Bytes()
	if rw.status == http.StatusOK {
		if out, ok := rewriteJSON(body, r, f); ok {
			body = out
		}
	}
	for k, v := range rw.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rw.status)
	_, _ = w.Write(body)
}

func rewriteJSON(body []byte, r *http.Request, f Fault) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	if f.CursorURL {
		cursorAsURL(v, r)
	}
	if f.FractionalCounts {
		v = withFractions(v)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	return append(out, '\n'), true
}

// cursorAsURL turns a nextCursor string into the full URL of the next page
// (the request's own, with the cursor parameter set), as an independent
// integration of the API reports it is sometimes given.
func cursorAsURL(v any, r *http.Request) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	next, ok := m["nextCursor"].(string)
	if !ok || next == "" {
		return
	}
	q := r.URL.Query()
	q.Set("cursor", next)
	u := url.URL{Scheme: "https", Host: "api.mintlify.com", Path: r.URL.Path, RawQuery: q.Encode()}
	m["nextCursor"] = u.String()
}

// withFractions writes every whole number with a fraction: 10 as 10.0.
func withFractions(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = withFractions(e)
		}
	case []any:
		for i, e := range x {
			x[i] = withFractions(e)
		}
	case json.Number:
		if !strings.ContainsAny(string(x), ".eE") {
			return json.Number(string(x) + ".0")
		}
	}
	return v
}
