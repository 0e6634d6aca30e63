package bounded

import (
	"strings"
	"testing"
)

func TestCheckID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"job_3f9a1c_000001", true},
		{"66f1a2b3c4d5e6f708192a3b", true},
		{strings.Repeat("a", MaxIDBytes), true},
		{strings.Repeat("a", MaxIDBytes+1), false},
		{strings.Repeat("a", 1<<20), false},
		{"", false},
		{"a b", false},
		{"a\x00b", false},
		{"a\nb", false},
		{"é", false},
		{"a\x7f", false},
	} {
		err := CheckID("job id", tc.id)
		if (err == nil) != tc.ok {
			t.Errorf("CheckID(%s) = %v, want ok %v", Excerpt(tc.id), err, tc.ok)
		}
		if err != nil && len(err.Error()) > 200 {
			t.Errorf("CheckID error is %d bytes: the id must not be quoted whole", len(err.Error()))
		}
	}
}

func TestExcerptAndText(t *testing.T) {
	t.Parallel()
	if got := Excerpt("a\nb"); got != `"a\nb"` {
		t.Errorf("Excerpt = %s", got)
	}
	long := strings.Repeat("x", 1<<20)
	if got := Excerpt(long); len(got) > 80 || !strings.Contains(got, "1048576 bytes") {
		t.Errorf("Excerpt of 1 MB = %q", got)
	}
	if got := Text(long); len(got) > MaxLabelBytes {
		t.Errorf("Text kept %d bytes", len(got))
	}
}
