package refresh

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// What publish stores is read back as it was: the walk's start and
// duration and the snapshot; anything cut, damaged or of the JSON envelope
// earlier versions published is an error, never a snapshot; and what it
// unpacks to is bounded.
func TestPublishedRoundTrip(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	def, _ := sources.ByName(sources.NameVisitors)
	snap := walkDirectly(t, h, def)
	start := time.Date(2026, 3, 10, 15, 4, 5, 123456789, time.UTC)
	data, err := encodePublished(snap, start, 1234*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var f fetched
	if err := decodePublished(data, &f); err != nil {
		t.Fatal(err)
	}
	if !f.started.Equal(start) || f.took != 1234*time.Millisecond || !reflect.DeepEqual(samples(def, f.snap), samples(def, snap)) || f.snap.Meta() != snap.Meta() {
		t.Errorf("read back: started %s, took %s, meta %+v; want %s, 1.234s, %+v", f.started, f.took, f.snap.Meta(), start, snap.Meta())
	}
	wire, _ := sources.EncodeSnapshot(snap)
	old, _ := json.Marshal(map[string]any{"started": start, "duration_ns": 7, "snapshot": wire})
	var bomb bytes.Buffer
	bomb.Write(make([]byte, publishedHead))
	zw := gzip.NewWriter(&bomb)
	_, _ = zw.Write(make([]byte, maxSnapshotBytes+1))
	_ = zw.Close()
	flipped := bytes.Clone(data)
	flipped[len(flipped)/2] ^= 0xff
	for name, bad := range map[string][]byte{"cut": data[:len(data)-9], "short": data[:publishedHead], "flipped": flipped,
		"the JSON envelope of earlier versions": old, "unpacks over the bound": bomb.Bytes()} {
		var f fetched
		err := decodePublished(bad, &f)
		if err == nil || f.snap != nil {
			t.Errorf("%s: read as %v, %v; want an error", name, f.snap, err)
		}
		if name == "unpacks over the bound" && !strings.Contains(err.Error(), "more than") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzPublished: whatever Redis or a file hands over (a cut, a flipped
// bit, a gzip bomb, another version's JSON), decodePublished never panics
// and gives a snapshot only without an error.
func FuzzPublished(f *testing.F) {
	h := newHarness(f, harnessOptions{})
	h.refreshDue()
	data, err := encodePublished(h.sched.Views()[0].Data, time.Unix(1, 2), 3)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add([]byte(`{"started":"2026-03-10T15:04:05Z","duration_ns":1,"snapshot":"e30="}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var got fetched
		err := decodePublished(b, &got)
		if (err == nil) != (got.snap != nil) {
			t.Fatalf("decodePublished = %v, %v", got.snap, err)
		}
	})
}
