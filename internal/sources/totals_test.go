package sources_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// urlRecorder serves next and keeps the URL of every request.
type urlRecorder struct {
	next http.Handler
	mu   sync.Mutex
	urls []*url.URL
}

func (r *urlRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.urls = append(r.urls, req.URL)
	r.mu.Unlock()
	r.next.ServeHTTP(w, req)
}

// take returns the URLs recorded since the last take.
func (r *urlRecorder) take() []*url.URL {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.urls
	r.urls = nil
	return out
}

// TestTotalsAskForOneRow: a site-totals refresh of every source that has
// one is a single request for one row (limit=1, from the first), over
// HTTP as the fake receives it: the plan refreshes totals more often than
// page walks because they cost one small request, whatever the site's size.
func TestTotalsAskForOneRow(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 600}, nil)
	rec := &urlRecorder{next: e.fake}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	client, err := apiclient.New(apiclient.Config{BaseURL: srv.URL, APIKey: key, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e.cfg.Client = client
	var checked []string
	for _, def := range sources.All() {
		if !def.TotalsOnly {
			continue
		}
		checked = append(checked, def.Name)
		q := e.window(7)
		q.TotalsOnly = true
		snap := e.walk(e.source(def.Name), q)
		urls := rec.take()
		if len(urls) != 1 || snap.Meta().Requests != 1 {
			t.Errorf("%s totals: %d requests (%d counted), want 1: %v", def.Name, len(urls), snap.Meta().Requests, urls)
			continue
		}
		u := urls[0]
		v := u.Query()
		if path.Base(u.Path) != def.Name {
			t.Errorf("%s totals read %s", def.Name, u.Path)
		}
		if v.Get("limit") != "1" {
			t.Errorf("%s totals asked for limit=%q, want 1: %s", def.Name, v.Get("limit"), u)
		}
		if off := v.Get("offset"); off != "" && off != "0" {
			t.Errorf("%s totals asked from offset %s: %s", def.Name, off, u)
		}
		if v.Get("dateFrom") != q.DateFrom || v.Get("dateTo") != q.DateTo {
			t.Errorf("%s totals asked for %s..%s, want %s..%s", def.Name, v.Get("dateFrom"), v.Get("dateTo"), q.DateFrom, q.DateTo)
		}
	}
	if len(checked) < 2 {
		t.Errorf("totals checked for %v; visitors and views both have them", checked)
	}
}
