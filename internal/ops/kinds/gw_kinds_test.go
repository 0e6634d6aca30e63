package kinds_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
)

// TestEveryKindIsWhole fails when a kind of operation is half added: for
// every Kinds(), its buckets are in the state's layout, the
// gateway has its routes (its unknown outcomes list answers over HTTP, and
// an unsaved one can be handed over), its unknown-outcome gauge is
// exported, and its docs page names the gauge and the list route.
func TestEveryKindIsWhole(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t, "d1")
	_, _, buckets := engine.Layout()
	buckets = append(buckets, "jobs") // the store's own bucket
	for _, kind := range engine.Kinds() {
		k := kind.Declare()
		t.Run(k.Name, func(t *testing.T) {
			for _, b := range []string{k.Records, k.Intents} {
				if !slices.Contains(buckets, b) {
					t.Errorf("bucket %q is not in the state's layout (Layout)", b)
				}
			}
			if _, ok := e.trk.Kind(k.Name).(gateway.Routed); !ok {
				t.Fatalf("kind %q has no routes", k.Name)
			}
			unknown := func(p string) string { return fmt.Sprintf(k.Routes.Unknown, p) }
			r := e.call("GET", unknown("d1"), "")
			var body map[string]json.RawMessage
			if r.status != http.StatusOK || json.Unmarshal(r.body, &body) != nil || len(body) != 1 {
				t.Errorf("GET %s: HTTP %d %s, want 200 with one list", unknown("d1"), r.status, r.body)
			}
			if _, err := gateway.HandoffRequest(context.Background(), Unsaved{Kind: k.Name, Project: "d1", ID: "x1", Intent: "i1"}); err != nil {
				t.Errorf("HandoffRequest: %v", err)
			}
			if _, ok := e.value(k.UnknownGauge, "project", "d1"); !ok {
				t.Errorf("%s{project=d1} is not exported", k.UnknownGauge)
			}
			doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", k.Doc))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{k.UnknownGauge, path.Base(unknown("p")), "track?intent="} {
				if !strings.Contains(string(doc), want) {
					t.Errorf("docs/%s does not name %q", k.Doc, want)
				}
			}
		})
	}
}
