package apiclient_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// bodyTransport answers every request with one status and body, without a
// network: the client's whole decoding path runs on fuzzed input.
type bodyTransport struct {
	status int
	header http.Header
	body   []byte
}

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
	h := b.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{StatusCode: b.status, Header: h, Body: io.NopCloser(bytes.NewReader(b.body)), Request: r}, nil
}

func fuzzClient(t *testing.T, tr http.RoundTripper) *apiclient.Client {
	t.Helper()
	c, err := apiclient.New(apiclient.Config{BaseURL: "http://api.invalid", APIKey: testKey, Timeout: time.Second, MaxRetries: 0,
		HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fuzzStatus(s uint16) int {
	codes := []int{200, 201, 400, 401, 404, 429, 500, 503}
	return codes[int(s)%len(codes)]
}

// FuzzVisitorsPage decodes fuzzed visitors pages through AllVisitors: never
// a panic, never the key in an error, and a success is a report without
// negative counts or repeated paths.
func FuzzVisitorsPage(f *testing.F) {
	f.Add([]byte(`{"totals":{"human":3,"ai":1,"total":4},"data":[{"path":"/a","human":2,"ai":1,"total":3}],"hasMore":false}`), uint16(0))
	f.Add([]byte(`{"totals":{"human":-1},"data":[],"hasMore":true}`), uint16(0))
	f.Add([]byte(`{"error":{"message":"rate limited mint_test_key_0123"}}`), uint16(5))
	f.Add([]byte(`{"data":[{"path":"/a"},{"path":"/a"}],"hasMore":false}`), uint16(0))
	f.Add([]byte(`<html>`), uint16(6))
	f.Fuzz(func(t *testing.T, body []byte, status uint16) {
		c := fuzzClient(t, bodyTransport{status: fuzzStatus(status), body: body})
		rep, err := c.AllVisitors(context.Background(), "docs", apiclient.VisitorsQuery{DateFrom: "2025-01-01", DateTo: "2025-01-02"}, 10, 3)
		if err != nil {
			if strings.Contains(err.Error(), testKey) {
				t.Fatalf("error leaks the key: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, p := range rep.Paths {
			if seen[p.Path] {
				t.Fatalf("path %q twice", p.Path)
			}
			seen[p.Path] = true
			if p.Human < 0 || p.AI < 0 || p.Total < 0 {
				t.Fatalf("negative count in %+v", p)
			}
		}
		if rep.Totals.Human < 0 || rep.Totals.AI < 0 || rep.Totals.Total < 0 {
			t.Fatalf("negative totals %+v", rep.Totals)
		}
	})
}

// FuzzJob decodes fuzzed job answers of create and get: never a panic,
// never the key in an error, and a created job always has an id.
func FuzzJob(f *testing.F) {
	f.Add([]byte(`{"id":"job_1","status":"active","source":{"repository":"r","ref":"x"},"model":"m","prLink":null,"createdAt":"2026-01-01T00:00:00Z","archivedAt":null}`), uint16(0))
	f.Add([]byte(`{"id":"","status":"active"}`), uint16(1))
	f.Add([]byte(`{"id":"j","createdAt":"yesterday"}`), uint16(0))
	f.Add([]byte(`{"error":"nope mint_test_key_0123"}`), uint16(2))
	f.Add([]byte(`null`), uint16(0))
	f.Fuzz(func(t *testing.T, body []byte, status uint16) {
		c := fuzzClient(t, bodyTransport{status: fuzzStatus(status), body: body})
		job, code, err := c.CreateJobWithStatus(context.Background(), "docs", "a prompt")
		if err != nil {
			if strings.Contains(err.Error(), testKey) {
				t.Fatalf("error leaks the key: %v", err)
			}
		} else if job == nil || job.ID == "" || code < 200 || code > 299 {
			t.Fatalf("created %+v with HTTP %d", job, code)
		}
		if _, err := c.GetJob(context.Background(), "docs", "job_1"); err != nil && strings.Contains(err.Error(), testKey) {
			t.Fatalf("error leaks the key: %v", err)
		}
	})
}

// FuzzRetryAfter parses fuzzed Retry-After values: never negative, never
// more than the cap, and delay-seconds are read exactly.
func FuzzRetryAfter(f *testing.F) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, s := range []string{"", "0", "30", " 30 ", "-5", "99999999999999999999", "3600", "3601",
		"Fri, 02 Jan 2026 03:05:05 GMT", "Thu, 01 Jan 2026 03:05:05 GMT", "Monday, 02-Jan-26 03:05:05 GMT", "1.5", "abc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d := apiclient.ParseRetryAfter(v, now)
		if d < 0 || d > time.Hour {
			t.Fatalf("%q: %s", v, d)
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			want := time.Duration(min(max(n, 0), 3600)) * time.Second
			if d != want {
				t.Fatalf("%q: %s, want %s", v, d, want)
			}
		}
	})
}
