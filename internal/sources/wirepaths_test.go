package sources

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestWirePathsAsEncodingJSON: the paths decode as encoding/json decodes
// them, by the fast path or not, and what json.Marshal writes takes the
// fast path.
func TestWirePathsAsEncodingJSON(t *testing.T) {
	marshaled := []wirePath{
		{Path: "/", Human: 1, AI: 0, Total: 1},
		{Path: "/docs/ü/日本", Human: 1e21, AI: 0.1, Total: math.MaxFloat64},
		{Path: "", Human: -0, AI: 5e-324, Total: 123456789.125},
	}
	b, err := json.Marshal(marshaled)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := fastPaths(b); !ok || !reflect.DeepEqual([]wirePath(got), marshaled) {
		t.Errorf("json.Marshal's paths: fast path %v, %+v", ok, got)
	}
	for _, in := range []string{
		string(b),
		`[]`, `null`, ` [ ] `,
		`[{"path":"/a\"b","human":1,"ai":2,"total":3}]`,
		`[{"path":"/a\u00e9","human":1,"ai":2,"total":3}]`,
		"[{\"path\":\"/\xff\",\"human\":1,\"ai\":2,\"total\":3}]",
		`[{"path":"/a","human":1,"ai":2,"total":3,"total":4}]`,
		`[{"PATH":"/a","human":1,"ai":2,"total":3}]`,
		`[{"path":"/a","ai":2,"human":1,"total":3}]`,
		`[{"path":"/a","human":1,"ai":2}]`,
		`[{"path":"/a","human":1,"ai":2,"total":3,"extra":1}]`,
		`[{"path":"/a","human":1e400,"ai":2,"total":3}]`,
		`[{"path":"/a","human":-1.5E+3,"ai":2,"total":3},{"path":"/b","human":0,"ai":0,"total":0}]`,
		`[{"path":"/a","human":"1","ai":2,"total":3}]`,
		`[{"path":null,"human":null,"ai":2,"total":3}]`,
	} {
		var want []wirePath
		dec := json.NewDecoder(stringsReader(in))
		dec.DisallowUnknownFields()
		wantErr := dec.Decode(&want)
		var got wirePaths
		gotErr := json.Unmarshal([]byte(in), &got)
		// On an error the snapshot is refused: what was decoded is not used.
		if (wantErr != nil) != (gotErr != nil) || wantErr == nil && !reflect.DeepEqual([]wirePath(got), want) {
			t.Errorf("%s: got %#v (%v), encoding/json %#v (%v)", in, got, gotErr, want, wantErr)
		}
	}
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }

// trafficSeed is a traffic snapshot as EncodeSnapshot writes it.
func trafficSeed(t testing.TB, paths wirePaths) []byte {
	w := &wireTraffic{Meta: wireMeta{At: time.Date(2026, 3, 10, 15, 0, 0, 123, time.UTC), DateFrom: "2026-03-03", DateTo: "2026-03-10", Requests: 2},
		Site: wireCounts{Human: 3, AI: 1, Total: 4}, Paths: paths, Dropped: 1}
	if paths == nil {
		w.Meta.TotalsOnly, w.Dropped = true, 0
	}
	b, err := EncodeSnapshot(w.snapshot())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzFastTraffic: whatever fastTraffic reads, the envelope's decoder reads
// the same; what EncodeSnapshot writes of traffic, fastTraffic reads.
func FuzzFastTraffic(f *testing.F) {
	for _, paths := range []wirePaths{nil, {}, {{Path: "/a", Human: 1, AI: 2, Total: 3}, {Path: "/b/ü", Human: 0.5, Total: 0.5}}} {
		b := trafficSeed(f, paths)
		if _, ok := fastTraffic(b); !ok {
			f.Fatalf("fastTraffic does not read %s", b)
		}
		f.Add(b)
		f.Add(bytes.Replace(b, []byte(`"dropped":`), []byte(`"dropped": `), 1))
		f.Add(bytes.Replace(b, []byte(`"human":1`), []byte(`"human":01`), 1))
		f.Add(bytes.Replace(b, []byte(`"requests":2`), []byte(`"requests":2,"x":1`), 1))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := fastTraffic(b)
		if !ok {
			return
		}
		kind, slow, err := decodeEnvelope(b)
		if err != nil || kind != kindTraffic {
			t.Fatalf("fastTraffic read %s, decodeEnvelope: %q, %v", b, kind, err)
		}
		if !reflect.DeepEqual(any(fast), slow) {
			t.Fatalf("fastTraffic read %s as %+v, decodeEnvelope as %+v", b, fast, slow)
		}
	})
}

func TestJSONNumber(t *testing.T) {
	for in, want := range map[string]bool{"0": true, "-0": true, "1": true, "10.5": true, "1e5": true, "1E+5": true, "-2.5e-3": true,
		"": false, "-": false, "01": false, "1.": false, ".5": false, "1e": false, "1e+": false, "+1": false, "1.e5": false, "0x1": false} {
		if got := jsonNumber([]byte(in)); got != want {
			t.Errorf("jsonNumber(%q) = %v", in, got)
		}
	}
}
