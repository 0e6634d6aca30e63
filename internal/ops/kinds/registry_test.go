package kinds_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
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
