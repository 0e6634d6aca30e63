package server

import (
	"net/http"
	"strings"
	"testing"
)

func TestCheckTelemetryPath(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/metrics", "/metrics/", "/prometheus/metrics", "/x", "/apis", "/statusz", "/api-metrics"} {
		if err := CheckTelemetryPath(p); err != nil {
			t.Errorf("%s refused: %v", p, err)
		}
	}
	for _, p := range []string{
		"", "metrics", "/", "/api/", "/api", "/api/metrics", "/-/healthy", "/-/ready", "/-/reload", "/-/metrics", "/-/",
		"/status", "/status/", "/status/x", "/metrics/{x}", "/a b", "GET /metrics", "/metrics?x", "/m%2f", "//metrics",
		"/metrics/../api/", "/./metrics", "/metrics\n",
	} {
		err := CheckTelemetryPath(p)
		if err == nil {
			t.Errorf("%q accepted", p)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: the error is not one line: %q", p, err)
		}
	}
}

// TestAcceptedPathsNeverPanic registers every reserved route and then the
// telemetry path on a ServeMux, as the exporter does: whatever the checker
// accepts registers without a panic and is served by the metrics handler,
// while every reserved route keeps its own requests.
func TestAcceptedPathsNeverPanic(t *testing.T) {
	t.Parallel()
	candidates := []string{"/metrics", "/metrics/", "/m", "/apis", "/statusz", "/api", "/api/", "/-/healthy", "/-/ready",
		"/-/reload", "/status", "/", "/api/v2/agent/p/jobs", "/{x}", "/status/{$}"}
	for _, p := range candidates {
		if CheckTelemetryPath(p) != nil {
			continue
		}
		mux := http.NewServeMux()
		for _, r := range ReservedPaths {
			mux.HandleFunc(r, func(http.ResponseWriter, *http.Request) {})
		}
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Errorf("%s accepted but ServeMux panicked: %v", p, v)
				}
			}()
			mux.HandleFunc(p, func(http.ResponseWriter, *http.Request) {})
		}()
		for _, r := range ReservedPaths {
			probe := strings.TrimSuffix(r, "/") + "/x"
			if r == "/" {
				continue
			}
			for _, target := range []string{r, probe} {
				req, _ := http.NewRequest("GET", "http://h"+target, nil)
				if _, pattern := mux.Handler(req); pattern == p {
					t.Errorf("telemetry path %s takes %s from the route %s", p, target, r)
				}
			}
		}
	}
}
