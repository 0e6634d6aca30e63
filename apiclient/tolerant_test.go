package apiclient_test

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// The proofs of issue 35: each walks the fake over HTTP, and each failed
// on the client before it (one row per id, strict times and integers,
// error details dropped, cursors sent back whole).

var turnsDay = apiclient.DateRange{DateFrom: "2025-03-13", DateTo: "2025-03-14"}

// TestTolerantReaderTurnsSpanTwoPages: a conversation whose turns share an
// id and fall on two pages is counted turn by turn, with each turn's own
// resolution.
func TestTolerantReaderTurnsSpanTwoPages(t *testing.T) {
	t.Parallel()
	fake, _, srv := startFake(t, fakeapi.Options{Paths: 30})
	from, to := time.Date(2025, 3, 13, 0, 0, 0, 0, time.UTC), time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)
	all := fake.Conversations(testProject, from, to, fixedNow())
	// The first conversation of several turns: a page that ends on its
	// first turn puts the others on the next page.
	split := -1
	for i := 0; i+1 < len(all); i++ {
		if all[i].ID == all[i+1].ID {
			split = i
			break
		}
	}
	if split < 0 {
		t.Fatal("the fake's day has no conversation of several turns")
	}
	id := all[split].ID
	var wantTurns, wantUnanswered int
	for _, c := range all {
		if c.ID == id {
			wantTurns++
		}
		if c.Resolution == apiclient.ResolutionUnanswered {
			wantUnanswered++
		}
	}
	c := newClient(t, srv.URL, nil)
	rep, err := c.AllTurns(testCtx(t), testProject, turnsDay, split+1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Turns) != len(all) || rep.Duplicates != 0 {
		t.Fatalf("%d turns (%d duplicates), the fake has %d", len(rep.Turns), rep.Duplicates, len(all))
	}
	var gotTurns, gotUnanswered int
	times := map[time.Time]bool{}
	for _, turn := range rep.Turns {
		if turn.ID == id {
			gotTurns++
			times[turn.Timestamp] = true
		}
		if turn.ResolutionStatus == apiclient.ResolutionUnanswered {
			gotUnanswered++
		}
	}
	if gotTurns != wantTurns || len(times) != wantTurns || wantTurns < 2 {
		t.Errorf("conversation %s: %d turns at %d times, want %d", id, gotTurns, len(times), wantTurns)
	}
	if gotUnanswered != wantUnanswered {
		t.Errorf("%d unanswered turns, want %d", gotUnanswered, wantUnanswered)
	}
	if rep.Requests < 2 {
		t.Errorf("%d requests: the conversation did not span two pages", rep.Requests)
	}
}

// TestTolerantReaderNullCreatedAt: among 30 items a page, one with a null
// createdAt is skipped and counted; the walk and the other items stand.
func TestTolerantReaderNullCreatedAt(t *testing.T) {
	t.Parallel()
	fake, _, srv := startFake(t, fakeapi.Options{Paths: 30})
	reg := prometheus.NewPedanticRegistry()
	c := newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.Metrics = apiclient.NewMetrics(reg) })
	week := apiclient.DateRange{DateFrom: "2025-03-08", DateTo: "2025-03-15"}
	plain, err := c.AllFeedback(testCtx(t), testProject, week, 30, 0)
	if err != nil {
		t.Fatal(err)
	}
	fake.SetFault(fakeapi.Feedback, fakeapi.Fault{NullCreatedAt: true})
	rep, err := c.AllFeedback(testCtx(t), testProject, week, 30, 0)
	if err != nil {
		t.Fatalf("a null createdAt failed the walk: %v", err)
	}
	if rep.Requests < 2 || len(plain.Items) < 60 {
		t.Fatalf("%d requests for %d items: want several pages of 30", rep.Requests, len(plain.Items))
	}
	if want := (apiclient.Skips{apiclient.SkipNoTime: rep.Requests}); !reflect.DeepEqual(rep.Skipped, want) {
		t.Errorf("skipped %v, want %v (one a page)", rep.Skipped, want)
	}
	if len(rep.Items) != len(plain.Items)-rep.Requests {
		t.Errorf("%d items read, want %d less the %d skipped", len(rep.Items), len(plain.Items), rep.Requests)
	}
	if got := skippedSeries(t, reg, "feedback", apiclient.SkipNoTime); got != float64(rep.Requests) {
		t.Errorf("mintlify_api_rows_skipped_total{feedback,no_time} = %v, want %d", got, rep.Requests)
	}
	if got := skippedSeries(t, reg, "assistant", apiclient.SkipMalformed); got != 0 {
		t.Errorf("an untouched reason reads %v, want a pre-created 0", got)
	}
}

// skippedSeries is the value of one mintlify_api_rows_skipped_total
// series (-1 when it does not exist).
func skippedSeries(t *testing.T, reg prometheus.Gatherer, endpoint, reason string) float64 {
	t.Helper()
	mf := gathered(t, reg, "mintlify_api_rows_skipped_total")
	if mf == nil {
		return -1
	}
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["endpoint"] == endpoint && labels["reason"] == reason {
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

// TestTolerantReaderFractionalCounts: counts written 10.0 (the reference
// types them as number) read as the same counts, on every endpoint that
// has counts.
func TestTolerantReaderFractionalCounts(t *testing.T) {
	t.Parallel()
	fake, _, srv := startFake(t, fakeapi.Options{Paths: 30})
	c := newClient(t, srv.URL, nil)
	week := apiclient.DateRange{DateFrom: "2025-03-08", DateTo: "2025-03-15"}
	read := func() []any {
		ctx := testCtx(t)
		v, err1 := c.AllVisitors(ctx, testProject, apiclient.VisitorsQuery{DateFrom: week.DateFrom, DateTo: week.DateTo}, 250, 0)
		var w []apiclient.PathViews
		_, err2 := c.ViewsPages(ctx, testProject, week, 250, 0, func(p []apiclient.PathViews) { w = append(w, p...) })
		f, err3 := c.FeedbackByPage(ctx, testProject, apiclient.FeedbackByPageQuery{DateRange: week, Limit: 100})
		s, err4 := c.TopSearches(ctx, testProject, week, 20, 0)
		cs, err5 := c.AssistantCallerStats(ctx, testProject, week)
		if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
			t.Fatal(err)
		}
		return []any{v, w, f, s, cs}
	}
	plain := read()
	for _, ep := range []string{fakeapi.Visitors, fakeapi.Views, fakeapi.FeedbackByPage, fakeapi.Searches, fakeapi.AssistantCallerStats} {
		fake.SetFault(ep, fakeapi.Fault{FractionalCounts: true})
	}
	fractional := read()
	for i := range plain {
		if !reflect.DeepEqual(plain[i], fractional[i]) {
			t.Errorf("answer %d read differently with counts written 10.0:\n%+v\n%+v", i, plain[i], fractional[i])
		}
	}
	if cs := fractional[4].(*apiclient.CallerStats); cs.Total == 0 || cs.ByCaller[apiclient.CallerWeb] == 0 {
		t.Errorf("caller stats %+v: the counts were dropped", cs)
	}
}

// TestTolerantReaderCursorAsURL: a nextCursor given as the full URL of the
// next page is followed by its cursor parameter, on every cursor endpoint.
func TestTolerantReaderCursorAsURL(t *testing.T) {
	t.Parallel()
	fake, rec, srv := startFake(t, fakeapi.Options{Paths: 30})
	c := newClient(t, srv.URL, nil)
	week := apiclient.DateRange{DateFrom: "2025-03-08", DateTo: "2025-03-15"}
	walk := func() []any {
		ctx := testCtx(t)
		f, err1 := c.AllFeedback(ctx, testProject, week, 20, 0)
		a, err2 := c.AllTurns(ctx, testProject, turnsDay, 40, 0)
		s, err3 := c.TopSearches(ctx, testProject, week, 250, 0)
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
		return []any{f, a, s}
	}
	plain := walk()
	for _, ep := range []string{fakeapi.Feedback, fakeapi.Assistant, fakeapi.Searches} {
		fake.SetFault(ep, fakeapi.Fault{CursorURL: true})
	}
	before := len(rec.requests())
	urls := walk()
	for i := range plain {
		if !reflect.DeepEqual(plain[i], urls[i]) {
			t.Errorf("walk %d differs when cursors are URLs", i)
		}
	}
	for _, r := range rec.requests()[before:] {
		if strings.Contains(r.uri, "cursor=https") {
			t.Errorf("a URL sent back as the cursor: %s", r.uri)
		}
	}
	if n := len(rec.requests()) - before; n < 6 {
		t.Errorf("%d requests: the walks were one page each", n)
	}
}

// TestTolerantReaderErrorDetails: an analytics error's details join its
// error text, which the gateway and the status page show.
func TestTolerantReaderErrorDetails(t *testing.T) {
	t.Parallel()
	_, _, srv := startFake(t, fakeapi.Options{Paths: 30})
	c := newClient(t, srv.URL, nil)
	_, err := c.ViewsPages(testCtx(t), testProject, apiclient.DateRange{DateFrom: "2025-03-14", DateTo: "2025-03-01"}, 10, 0, func([]apiclient.PathViews) {})
	var apiErr *apiclient.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
		t.Fatalf("err %v, want an HTTP 400", err)
	}
	if want := "invalid date range: dateFrom must be before dateTo"; apiErr.Message != want || !strings.Contains(err.Error(), want) {
		t.Errorf("message %q (error %q), want %q", apiErr.Message, err, want)
	}
}

// TestTolerantReaderErrorDetailsBounded: details are bounded in length and
// never carry the key, however the API echoes it.
func TestTolerantReaderErrorDetailsBounded(t *testing.T) {
	t.Parallel()
	_, srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":"bad request","details":[{"message":"key %s refused"},{"message":"%s"}]}`,
			strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), strings.Repeat("x", 4000))
	})
	c := newClient(t, srv.URL, nil)
	_, err := c.AssistantCallerStats(testCtx(t), testProject, turnsDay)
	var apiErr *apiclient.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err %v", err)
	}
	if strings.Contains(err.Error(), testKey) || !strings.HasPrefix(apiErr.Message, "bad request: key <redacted> refused; xxx") {
		t.Errorf("message %.100q", apiErr.Message)
	}
	if len(apiErr.Message) > 520 {
		t.Errorf("message of %d bytes, want at most about 512", len(apiErr.Message))
	}
}

// TestTolerantReaderTimeForms: timestamps in the forms the reference's
// missing format allows are read (without a zone: UTC); a row whose time
// is in none of them, or has no id, is skipped with its reason.
func TestTolerantReaderTimeForms(t *testing.T) {
	t.Parallel()
	want := time.Date(2025, 3, 13, 10, 30, 0, 0, time.UTC)
	forms := []string{"2025-03-13T10:30:00Z", "2025-03-13T10:30:00.000Z", "2025-03-13T11:30:00+01:00",
		"2025-03-13T11:30:00+0100", "2025-03-13 10:30:00", "2025-03-13T10:30:00", "2025-03-13 10:30:00.5", "2025-03-13 10:30:00Z"}
	_, srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		var rows []string
		for i, f := range forms {
			rows = append(rows, fmt.Sprintf(`{"id":"c1","timestamp":%q,"responseType":"answer","resolutionStatus":"answered","queryCategory":null,"n":%d}`, f, i))
		}
		rows = append(rows, `{"id":"c2","timestamp":"13/03/2025"}`, `{"timestamp":"2025-03-13T10:30:00Z"}`, `{"id":"c3","timestamp":null}`, `{"id":7}`, `null`)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"conversations":[%s],"nextCursor":null,"hasMore":false}`, strings.Join(rows, ","))
	})
	c := newClient(t, srv.URL, nil)
	turns, err := c.AssistantPage(testCtx(t), testProject, turnsDay, 100, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != len(forms) {
		t.Fatalf("%d turns read, want %d", len(turns), len(forms))
	}
	for i, turn := range turns {
		at := turn.Timestamp.Truncate(time.Second)
		if !at.Equal(want) {
			t.Errorf("%q read as %v", forms[i], turn.Timestamp)
		}
	}
	rep, err := c.AllTurns(testCtx(t), testProject, turnsDay, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantSkips := apiclient.Skips{apiclient.SkipBadTime: 1, apiclient.SkipNoID: 1, apiclient.SkipNoTime: 1, apiclient.SkipMalformed: 2}
	if !reflect.DeepEqual(rep.Skipped, wantSkips) {
		t.Errorf("skipped %v, want %v", rep.Skipped, wantSkips)
	}
	// Several forms of one instant are one turn: a turn is its id and time.
	if len(rep.Turns) != 2 || rep.Duplicates != len(forms)-2 {
		t.Errorf("%d turns, %d duplicates: want the instant and its half second", len(rep.Turns), rep.Duplicates)
	}
}
