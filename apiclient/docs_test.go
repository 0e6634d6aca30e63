package apiclient

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestEveryEndpointIsDocumented: docs/metrics.md lists every value of the
// endpoint label of mintlify_api_requests_total (send_message was once
// missing).
func TestEveryEndpointIsDocumented(t *testing.T) {
	data, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "| `mintlify_api_requests_total` |") {
			row = line
		}
	}
	if row == "" {
		t.Fatal("docs/metrics.md: no row of mintlify_api_requests_total")
	}
	for _, e := range slices.Concat(AnalyticsEndpoints, operationEndpoints) {
		if !strings.Contains(row, "`"+e+"`") {
			t.Errorf("docs/metrics.md: mintlify_api_requests_total's endpoint values lack `%s`", e)
		}
	}
}
