package apiclient

import "testing"

// TestEveryEndpointButJobsPaysTheBudget: an analytics endpoint a new file
// forgets to declare still draws on the analytics budget; the agent job
// endpoints do not.
func TestEveryEndpointButJobsPaysTheBudget(t *testing.T) {
	for _, e := range append([]string{"an_endpoint_nobody_declared"}, AnalyticsEndpoints...) {
		if !isAnalytics(e) {
			t.Errorf("%s does not pay the analytics budget", e)
		}
	}
	for _, e := range operationEndpoints {
		if isAnalytics(e) {
			t.Errorf("agent job endpoint %s pays the analytics budget", e)
		}
	}
	if len(AnalyticsEndpoints) == 0 {
		t.Error("no analytics endpoint declared")
	}
}
