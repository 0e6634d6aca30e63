package fakeapi

import (
	"os"
	"strings"
	"testing"
)

// TestSandboxKindsAreDocumented: docs/sandbox.md names every
// automation the sandbox has and the domains that make an export fail or
// be refused, as the code defines them.
func TestSandboxKindsAreDocumented(t *testing.T) {
	data, err := os.ReadFile("../../docs/sandbox.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	for _, a := range DefaultAutomations {
		if !strings.Contains(readme, "`"+a.ID+"`") {
			t.Errorf("docs/sandbox.md does not name the sandbox's automation %s", a.ID)
		}
	}
	for _, prefix := range []string{exportFails.String(), exportDisabled.String()} {
		if p := strings.TrimPrefix(prefix, "^"); !strings.Contains(readme, "starting with `"+p+"`") {
			t.Errorf("docs/sandbox.md does not say what a domain starting with %s does", p)
		}
	}
}
