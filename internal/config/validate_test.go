package config

import (
	"errors"
	"testing"
	"time"
)

func TestChecks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		err  error
		ok   bool
	}{
		{"at least, equal", AtLeast(time.Second, time.Second), true},
		{"at least, below", AtLeast(0, time.Second), false},
		{"positive", Positive(int64(1)), true},
		{"positive, zero", Positive(time.Duration(0)), false},
		{"in range, low edge", InRange(1, 1, 3), true},
		{"in range, high edge", InRange(3, 1, 3), true},
		{"in range, over", InRange(4, 1, 3), false},
		{"projects", Projects([]string{"a", "b"}), true},
		{"no projects", Projects(nil), true},
		{"empty project", Projects([]string{"a", ""}), false},
		{"duplicate project", Projects([]string{"a", "a"}), false},
	} {
		if (c.err == nil) != c.ok {
			t.Errorf("%s: %v", c.name, c.err)
		}
	}
}

func TestFieldAndFirst(t *testing.T) {
	t.Parallel()
	if Field("X", nil) != nil || First(nil, nil) != nil {
		t.Fatal("nil errors are not nil")
	}
	err := First(nil, Field("PollInterval", Positive(0)), Field("Retention", Positive(0)))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "PollInterval" || err.Error() != "PollInterval: must be greater than 0, got 0" {
		t.Errorf("first field error: %v", err)
	}
}
