package kinds_test

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
)

// TestConfigTestdataIsTheKindsKeys: the keys the configuration's tests
// register (it does not import the kinds) are the ones the kinds declare.
func TestConfigTestdataIsTheKindsKeys(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../config/testdata/kinds.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.MarshalIndent(config.KindSettings(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != string(want)+"\n" {
		t.Errorf("internal/config/testdata/kinds.json is not the kinds' keys; write these:\n%s", want)
	}
}

// TestStatusJSONIsDocumented: scripts read each kind's rows of the status
// page's JSON (jobs.<key>[]) by the names the "Status page" section of
// docs/operations.md lists: every kind's key and every field of its rows
// is there.
func TestStatusJSONIsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Status page\n")
	if !ok {
		t.Fatal(`docs/operations.md has no "## Status page" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	e := newEnv(t, fakeapi.Options{})
	trk := e.open(e.config())
	sections := trk.Status().Sections
	if len(sections) != len(engine.Kinds()) {
		t.Fatalf("%d sections for %d kinds", len(sections), len(engine.Kinds()))
	}
	for _, s := range sections {
		if !strings.Contains(section, "`"+s.Key+"[]`") {
			t.Errorf("docs/operations.md's Status page does not document jobs.%s[]", s.Key)
		}
		typ := reflect.TypeOf(s.JSON)
		for typ.Kind() == reflect.Slice || typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		for _, f := range reflect.VisibleFields(typ) {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.Anonymous && !strings.Contains(section, "`"+name+"`") {
				t.Errorf("docs/operations.md's Status page does not document jobs.%s[].%s", s.Key, name)
			}
		}
	}
}
