package sources

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
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
