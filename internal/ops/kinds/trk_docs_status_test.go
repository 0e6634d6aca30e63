package kinds_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// TestUnknownStatusAsDocumented: docs/agent-gateway.md's row of the
// sandbox's #fake:unknown says how the job metrics count a status the API
// does not document; every status="..." it names is the series a job of
// that directive shows in mintlify_agent_jobs (it once said "other",
// while the status appears as itself).
func TestUnknownStatusAsDocumented(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../../docs/agent-gateway.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.HasPrefix(line, "| `#fake:unknown` |") {
			row = line
		}
	}
	claims := regexp.MustCompile("`status=\"([^\"]+)\"`").FindAllStringSubmatch(row, -1)
	if len(claims) == 0 {
		t.Fatalf("docs/agent-gateway.md: the #fake:unknown row names no status=\"...\" series: %q", row)
	}
	e := newEnv(t, fakeapi.Options{})
	e.open(e.config())
	j := e.create("p1", "#fake:unknown:10s")
	e.waitStatus("p1", j.ID, "waiting_for_review", 2)
	series := e.series("mintlify_agent_jobs")
	for _, c := range claims {
		if got := series["project=p1,status="+c[1]]; got != 1 {
			t.Errorf("docs/agent-gateway.md says a #fake:unknown job counts as status=%q; mintlify_agent_jobs has %v for it (series %v)", c[1], got, series)
		}
	}
}
