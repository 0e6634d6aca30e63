package config

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// The kinds of operation declare their keys when they initialise, which
// the configuration, a leaf, does not import: its tests register the keys
// the kinds declare, kept in testdata/kinds.json (internal/ops/kinds's
// TestConfigTestdataIsTheKindsKeys holds it to the kinds' own).
func init() {
	data, err := os.ReadFile("testdata/kinds.json")
	if err != nil {
		panic(err)
	}
	var settings []KindSetting
	if err := json.Unmarshal(data, &settings); err != nil {
		panic(err)
	}
	for _, s := range settings {
		RegisterKind(s)
	}
}

// TestKindKeys: each kind's key turns its kind on, a list key with its
// ids; the flag route's project takes every kind, with any id; a list's
// mistakes name their key.
func TestKindKeys(t *testing.T) {
	const head = "organizations: [{name: a, api_key_env: K}]\nprojects:\n"
	cfg, err := Parse("c.yml", []byte(head+"  - {id: p, agent_jobs: true, static_exports: false, automations: [nightly, '*']}\n  - {id: q}\n"), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Projects[0]
	if _, on := p.Takes("job"); !on {
		t.Error("agent_jobs: true does not take jobs")
	}
	if _, on := p.Takes("static_export"); on {
		t.Error("static_exports: false takes static exports")
	}
	if ids, _ := p.Takes("automation"); len(ids) != 2 || ids[0] != "nightly" {
		t.Errorf("automations: %v, want [nightly *]", ids)
	}
	if len(cfg.Projects[1].Kinds) != 0 || len(cfg.Taking("job")) != 1 {
		t.Errorf("q takes %v, taking jobs %v", cfg.Projects[1].Kinds, cfg.Taking("job"))
	}
	for _, bad := range []string{"[other]", "['a b']", "[x, x]"} {
		_, err := Parse("c.yml", []byte(head+"  - {id: p, automations: "+bad+"}\n"), 5*time.Minute)
		if err == nil || !strings.Contains(err.Error(), "projects[0].automations[") {
			t.Errorf("automations: %s: %v, want a problem naming the id", bad, err)
		}
	}
}
