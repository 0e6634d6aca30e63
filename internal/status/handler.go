package status

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"time"
)

// Link is a link in the page's header.
type Link struct {
	Text string `json:"text"`
	Href string `json:"href"`
}

// Options configure the page.
type Options struct {
	// Location is the time zone absolute times are shown in (nil = UTC).
	Location *time.Location
	// Now is the clock for reports without GeneratedAt (nil = time.Now).
	Now func() time.Time
}

// DefaultLinks point at the exporter's standard pages.
var DefaultLinks = []Link{{Text: "Metrics", Href: "/metrics"}, {Text: "Health", Href: "/-/healthy"}}

//go:embed page.html.tmpl
var pageSource string

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"duration": humanDuration,
	"percent":  func(n, of int) int { return min(100, n*100/max(of, 1)) },
}).Parse(pageSource))

// Handler serves the status page of the report source returns: HTML, or JSON
// with ?format=json. Only GET and HEAD are allowed. It serves every path it
// is mounted on; mount it on an exact path ("/{$}").
func Handler(source func(ctx context.Context) Report, opts Options) http.Handler {
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, r, http.StatusMethodNotAllowed, "method not allowed: use GET or HEAD")
			return
		}
		format := r.URL.Query().Get("format")
		if format != "" && format != "html" && format != "json" {
			writeError(w, r, http.StatusBadRequest, fmt.Sprintf("unknown format %q: use html or json", format))
			return
		}
		rep := source(r.Context())
		if rep.Links == nil {
			rep.Links = DefaultLinks
		}
		rep.derive(opts.Now())
		if format == "json" {
			writeJSON(w, r, http.StatusOK, rep)
			return
		}
		var buf bytes.Buffer
		if err := pageTemplate.Execute(&buf, newPage(rep, opts)); err != nil {
			// A template fault is ours (the tests render every field); its
			// text could quote the report, so it is not sent.
			writeError(w, r, http.StatusInternalServerError, "rendering the status page failed")
			return
		}
		// The page needs no script and loads nothing: forbid both, so user
		// data that slipped past escaping could not run either.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'")
		write(w, r, http.StatusOK, "text/html; charset=utf-8", buf.Bytes())
	})
}

// write sends a complete answer; HEAD gets its headers only.
func write(w http.ResponseWriter, r *http.Request, status int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"encoding the status report failed"}`)
	}
	write(w, r, status, "application/json", append(body, '\n'))
}

func writeError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	writeJSON(w, r, status, map[string]string{"error": msg})
}
