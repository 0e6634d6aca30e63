package sources_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// TestFaultsFailTheWalk: every fault of every source is an error of that
// walk (never a hang, a panic or a partial snapshot), and no error quotes
// the API's free text.
func TestFaultsFailTheWalk(t *testing.T) {
	t.Parallel()
	// A source's first endpoint is the one its walk reads first; the fake
	// names its endpoints as apiclient does.
	endpoints := map[string]string{}
	for _, def := range sources.All() {
		endpoints[def.Name] = def.Endpoints[0]
	}
	faults := map[string]fakeapi.Fault{
		"429":       {Status: 429, RetryAfter: "1"},
		"500":       {Status: 500},
		"malformed": {MalformedJSON: true},
		"negative":  {NegativeCounts: true},
		"endless":   {EndlessHasMore: true},
		"repeated":  {RepeatedCursor: true},
		"missing":   {MissingCursor: true},
	}
	for _, def := range sources.All() {
		name := def.Name
		for fault, f := range faults {
			switch {
			case (fault == "repeated" || fault == "missing") && !def.Paging.Cursor():
				continue // offset and single-page endpoints have no cursor
			case fault == "missing" && def.Paging == sources.PagingCursorToNull:
				continue // a null cursor is the end
			case fault == "endless" && def.Paging == sources.PagingOnePage:
				continue // one page only
			case fault == "negative" && def.Paging == sources.PagingCursor:
				continue // the cursor endpoints list items, not counts
			}
			t.Run(name+"/"+fault, func(t *testing.T) {
				t.Parallel()
				e := start(t, fakeapi.Options{Paths: 30}, func(c *sources.Config) { c.MaxPages = 5; c.Settings = map[string]int{"top_queries": 1000} }) // more pages than the cap
				e.fake.SetFault(endpoints[name], f)
				snap, err := e.source(name).Walk(ctx(t), e.window(7))
				if err == nil || snap != nil {
					t.Fatalf("walk under %s: snapshot %v, err %v; want an error and no snapshot", fault, snap != nil, err)
				}
				if strings.Contains(err.Error(), "PRIVATE") || strings.Contains(err.Error(), "example.com") {
					t.Errorf("error quotes free text: %v", err)
				}
				switch fault {
				case "endless":
					if !errors.Is(err, apiclient.ErrTooManyPages) {
						t.Errorf("endless: %v, want ErrTooManyPages", err)
					}
					if got := e.fake.Requests(endpoints[name]); got != 5 {
						t.Errorf("endless: %d requests, want the cap of 5", got)
					}
				case "repeated", "missing":
					if !errors.Is(err, apiclient.ErrBadCursor) {
						t.Errorf("%s: %v, want ErrBadCursor", fault, err)
					}
				case "429", "500":
					if apiclient.StatusCode(err) == 0 {
						t.Errorf("%s: %v carries no status", fault, err)
					}
				}
			})
		}
	}
	// The assistant's caller stats fail the walk too.
	e := start(t, fakeapi.Options{Paths: 30}, nil)
	e.fake.SetFault(fakeapi.AssistantCallerStats, fakeapi.Fault{Status: 500})
	if _, err := e.source(sources.NameAssistant).Walk(ctx(t), e.window(1)); apiclient.StatusCode(err) != 500 {
		t.Errorf("caller stats 500: %v", err)
	}
}
