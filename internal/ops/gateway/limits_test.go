package gateway

import (
	"errors"
	"testing"
	"time"
)

// admit takes a slot of l for project at at: nil, or the wait a refusal
// names.
func admit(t *testing.T, l *Limiter, project string, at time.Time) (bool, time.Duration) {
	t.Helper()
	var admitted bool
	err := l.Admit(project, at, &admitted)()
	if err == nil {
		return admitted || l.limit <= 0, 0
	}
	le, ok := errors.AsType[*LimitError](err)
	if !ok {
		t.Fatalf("Admit: %v, want a *LimitError", err)
	}
	return false, le.Wait
}

func TestLimiter(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	newGateway := func() *Gateway { return &Gateway{limits: map[string]*Limiter{}, limited: newLimited()} }
	l := newGateway().Limit("creates", "create", "jobs", 3, time.Hour, false)
	for i := range 3 {
		if ok, _ := admit(t, l, "p", t0.Add(time.Duration(i)*time.Minute)); !ok {
			t.Fatalf("admit %d refused", i)
		}
	}
	ok, wait := admit(t, l, "p", t0.Add(10*time.Minute))
	if ok || wait != 50*time.Minute {
		t.Errorf("4th: ok=%v wait=%s, want refused for 50m", ok, wait)
	}
	if ok, _ := admit(t, l, "q", t0); !ok {
		t.Error("limit is not per project")
	}
	l.Release("p", t0.Add(2*time.Minute))
	if ok, _ := admit(t, l, "p", t0.Add(10*time.Minute)); !ok {
		t.Error("released slot not reusable")
	}
	if ok, _ := admit(t, l, "p", t0.Add(60*time.Minute)); !ok {
		t.Error("slot of t0 not freed after the window")
	}

	// Seeded from before a restart (what the engine's records hold), the
	// first time a project is met.
	g := newGateway()
	l = g.Limit("creates", "create", "jobs", 2, time.Hour, false)
	if g.Limit("creates", "", "", 0, 0, false) != l {
		t.Error("a second Limit of the name is another limiter")
	}
	l.Seed(func(time.Duration) map[string][]time.Time {
		return map[string][]time.Time{"p": {t0.Add(-2 * time.Hour), t0.Add(-30 * time.Minute), t0.Add(-10 * time.Minute)}}
	})
	ok, wait = admit(t, l, "p", t0)
	if ok || wait != 30*time.Minute {
		t.Errorf("after seed: ok=%v wait=%s, want refused for 30m", ok, wait)
	}

	// Disabled.
	l = newGateway().Limit("creates", "create", "jobs", 0, time.Hour, false)
	for range 1000 {
		if ok, _ := admit(t, l, "p", t0); !ok {
			t.Fatal("disabled limiter refused")
		}
	}
}
