package refresh

import (
	"context"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// TestRefreshDueWalksEverythingDue: one RefreshDue call walks every
// window that is due, even when a walk ends before RefreshDue looks at
// the walks in flight (it returned early then, leaving the next window of
// unknown cost unwalked until the following call). The race is timing
// dependent: the old code failed here with a 5ms pause after startDue, and
// collector's TestVisitorsQueryDates about once in 20 runs under -race.
func TestRefreshDueWalksEverythingDue(t *testing.T) {
	t.Parallel()
	d1, _ := analytics.ParseWindow("1d")
	d7, _ := analytics.ParseWindow("7d")
	fake := fakeapi.New(fakeapi.Options{APIKey: simKey, Paths: 5})
	for i := range 100 {
		b, client := fakeBudgetClient(t, fake, 1000, nil)
		s, err := New(client, b, planConfig{Projects: []string{"docs"}, Windows: []analytics.Window{d1, d7},
			Config: Config{PageSize: apiclient.MaxPageSize, MinInterval: 5 * time.Minute, FinalDayDelay: -1}}.build(), nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s.RefreshDue(ctx)
		cancel()
		for _, v := range s.Views() {
			if !v.Attempted {
				t.Fatalf("run %d: window %s not walked by one RefreshDue", i, v.Window)
			}
		}
		s.Close()
	}
}
