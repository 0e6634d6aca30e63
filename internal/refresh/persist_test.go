package refresh

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// decodePublished reads what publish writes as encoding/json does, and
// falls back to it for any other layout of the same JSON.
func TestDecodePublished(t *testing.T) {
	at := time.Date(2026, 3, 10, 15, 4, 5, 123456789, time.FixedZone("x", 3600))
	for _, p := range []published{
		{Started: at, Duration: 1234, Snapshot: []byte(`{"format":2}`)},
		{Started: at.UTC(), Duration: 0, Snapshot: []byte{}},
		{Started: at, Duration: -5, Snapshot: []byte{0, 1, 2, 0xff, '"', '\\'}},
	} {
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		inputs := [][]byte{data, []byte(" " + string(data)), reorder(t, data)}
		for _, in := range inputs {
			var want, got published
			werr := json.Unmarshal(in, &want)
			gerr := decodePublished(in, &got)
			if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(want, got) || !got.Started.Equal(p.Started) {
				t.Errorf("decodePublished(%s) = %+v, %v; encoding/json: %+v, %v", in, got, gerr, want, werr)
			}
		}
	}
	for _, bad := range []string{`{"started":"x","duration_ns":1,"snapshot":"AAA"}`, `{"started":"2026-03-10T15:04:05Z","duration_ns":1,"snapshot":"A!=="}`, `nope`} {
		var p published
		if err := decodePublished([]byte(bad), &p); err == nil {
			t.Errorf("decodePublished(%s) took it", bad)
		}
	}
}

// reorder is data's fields in another order, as another writer might.
func reorder(t *testing.T, data []byte) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return []byte(`{"snapshot":` + string(m["snapshot"]) + `,"duration_ns":` + string(m["duration_ns"]) + `,"started":` + string(m["started"]) + `}`)
}

// SplitPublished takes what publish writes apart and JoinPublished gives
// it back byte for byte; any other layout is not split.
func TestSplitPublished(t *testing.T) {
	at := time.Date(2026, 3, 10, 15, 4, 5, 123456789, time.UTC)
	for _, snap := range [][]byte{[]byte(`{"format":2,"kind":"traffic"}`), {}, {0, '\n', 0xff, '"'}} {
		data, err := json.Marshal(published{Started: at, Duration: 7, Snapshot: snap})
		if err != nil {
			t.Fatal(err)
		}
		head, got, ok := SplitPublished(data)
		if !ok || string(got) != string(snap) || string(JoinPublished(head, got)) != string(data) {
			t.Errorf("SplitPublished(%s) = %q, %q, %v", data, head, got, ok)
		}
		if _, _, ok := SplitPublished(reorder(t, data)); ok {
			t.Errorf("SplitPublished split another layout: %s", reorder(t, data))
		}
	}
	if _, _, ok := SplitPublished([]byte(`{"started":"x","duration_ns":1,"snapshot":"A!=="}`)); ok {
		t.Error("SplitPublished split bad base64")
	}
}
