package conformance_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/conformance"
)

// TestBinaryDoesNotImportAPIRef: the reference's validator is a test
// tool; the exporter's binary must not carry it (the reference itself is
// in test files, which no binary can import).
func TestBinaryDoesNotImportAPIRef(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/mintlify-exporter/mintlify_exporter").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/pb33f/") {
			t.Errorf("the binary depends on %s", dep)
		}
	}
}

// TestReferenceLoads: every vendored file parses as a valid OpenAPI
// document (Load checks each with the validator's own ValidateDocument),
// and each request path family maps to the file that describes it.
func TestReferenceLoads(t *testing.T) {
	t.Parallel()
	if _, err := conformance.Load(); err != nil {
		t.Fatal(err)
	}
	if len(conformance.Files()) != 4 {
		t.Errorf("files %v", conformance.Files())
	}
	for path, want := range map[string]bool{
		"/v1/analytics/p/visitors":    true,
		"/v2/agent/p/job":             true,
		"/v1/project/update-status/s": true,
		"/v1/workflow/p/w/trigger":    true,
		"/v1/static-export/jobs":      true,
		"/v1/unknown/p":               false,
		"/analytics/p/visitors":       false,
	} {
		if got := conformance.Covers(path); got != want {
			t.Errorf("Covers(%s) = %v, want %v", path, got, want)
		}
	}
}
