package fakeapi

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestEveryDirectiveIsDocumented: docs/agent-gateway.md's table names
// every #fake: directive the sandbox understands (#fake:unknown was once
// missing).
func TestEveryDirectiveIsDocumented(t *testing.T) {
	data, err := os.ReadFile("../../docs/agent-gateway.md")
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`^#fake:\(([a-z|]+)\)`).FindStringSubmatch(directive.String())
	if names == nil {
		t.Fatalf("cannot read the directives from %s", directive)
	}
	for _, name := range strings.Split(names[1], "|") {
		if !strings.Contains(string(data), "| `#fake:"+name+"` |") {
			t.Errorf("docs/agent-gateway.md: no row of the directive #fake:%s", name)
		}
	}
}
