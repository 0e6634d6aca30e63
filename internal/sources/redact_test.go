package sources_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/secrets"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// echoKey serves the fake with its answers' texts altered the way an API
// echoing the key alters them: page paths carrying the key minus its last
// character and URL-escaped, a search query carrying it JSON-escaped.
type echoKey struct {
	fake *fakeapi.Server
	key  string
}

func (h echoKey) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	h.fake.ServeHTTP(rec, r)
	var escaped strings.Builder
	for _, c := range h.key {
		escaped.WriteString(`\u00` + strings.ToLower(string("0123456789ABCDEF"[c>>4])+string("0123456789ABCDEF"[c&15])))
	}
	body := rec.Body.Bytes()
	for from, to := range map[string]string{
		`"/quickstart"`:   `"/quickstart?token=` + h.key[:len(h.key)-1] + `"`,
		`"/installation"`: `"/installation/` + strings.ReplaceAll(h.key, "_", "%5F") + `"`,
		`"api key"`:       `"api key ` + escaped.String() + `"`,
	} {
		body = bytes.ReplaceAll(body, []byte(from), []byte(to))
	}
	for k, v := range rec.Header() {
		if k != "Content-Length" {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}

// TestLabelsNeverCarryTheKey: the API's texts that become labels — the
// paths of visitors, views and feedback pages, search queries (opted in)
// — are masked when they echo the key, altered or not, in every source.
func TestLabelsNeverCarryTheKey(t *testing.T) {
	t.Parallel()
	const key = "mint_q8W2zR5tY7uI9oP1"
	clock := testutil.NewClock(fixedNow())
	fake := fakeapi.New(fakeapi.Options{APIKey: key, Projects: []string{project}, Now: clock.Now, Location: time.UTC, Paths: 50})
	srv := httptest.NewServer(echoKey{fake: fake, key: key})
	t.Cleanup(srv.Close)
	client, err := apiclient.New(apiclient.Config{BaseURL: srv.URL, APIKey: key, Timeout: 5 * time.Second, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sources.Config{Client: client, Location: time.UTC, Now: clock.Now, StateDir: t.TempDir(), Settings: map[string]int{"top_queries": 100}}
	cfg.Paths.Redact = secrets.NewRedactor(key).String
	e := &env{t: t, fake: fake, clock: clock, cfg: cfg}
	q := e.window(30)
	masked := 0
	for _, name := range []string{sources.NameVisitors, sources.NameViews, sources.NameFeedback, sources.NameFeedbackItems,
		sources.NameSearches, sources.NameAssistant} {
		src := e.source(name)
		for family, series := range collect(t, src, e.walk(src, q), "30d") {
			for lv := range series {
				masked += strings.Count(lv, secrets.Mask)
				for i := 0; i+8 <= len(key); i++ {
					if strings.Contains(lv, key[i:i+8]) {
						t.Errorf("%s: %s{%s} carries %q of the key", name, family, lv, key[i:i+8])
					}
				}
			}
		}
	}
	if masked == 0 {
		t.Error("no label was masked: the echoes never reached a label, the test tests nothing")
	}
}
