package apiclient_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// TestRequestCap: under WithRequestCap, an endless walk sends exactly the
// cap, retries included, and fails as a pagination error.
func TestRequestCap(t *testing.T) {
	t.Parallel()
	fake, rec, srv := startFake(t, fakeapi.Options{Paths: 20})
	fake.SetFault(fakeapi.Feedback, fakeapi.Fault{EndlessHasMore: true})
	c := newClient(t, srv.URL, nil)
	week := apiclient.DateRange{DateFrom: "2025-03-08", DateTo: "2025-03-15"}
	_, err := c.AllFeedback(apiclient.WithRequestCap(testCtx(t), 7), testProject, week, 10, 0)
	if !errors.Is(err, apiclient.ErrTooManyPages) || !strings.Contains(err.Error(), "cap of 7 requests") {
		t.Fatalf("err = %v, want the cap's pagination error", err)
	}
	if n := len(rec.requests()); n != 7 {
		t.Errorf("%d requests, want the cap of 7", n)
	}
	// Retries spend the cap too: 2 retries of a 500 under a cap of 2 send 2.
	fake.SetFault(fakeapi.Feedback, fakeapi.Fault{Status: 500})
	before := len(rec.requests())
	if _, err := c.AllFeedback(apiclient.WithRequestCap(testCtx(t), 2), testProject, week, 10, 0); !errors.Is(err, apiclient.ErrTooManyPages) {
		t.Errorf("retries under the cap: %v, want ErrTooManyPages", err)
	}
	if n := len(rec.requests()) - before; n != 2 {
		t.Errorf("%d requests with retries, want the cap of 2", n)
	}
}
