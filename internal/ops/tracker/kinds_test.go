package tracker

import "testing"

// TestEveryKindHasAnEnginePart fails when a registered kind has no part in
// the engine's poll rounds and retention (Kind.engine): its operations
// would be written but never polled, counted or forgotten.
func TestEveryKindHasAnEnginePart(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	for _, k := range Kinds() {
		if names[k.Name] {
			t.Errorf("kind %q is registered twice", k.Name)
		}
		names[k.Name] = true
		if k.engine == nil || k.engine(&Tracker{}) == nil {
			t.Errorf("kind %q has no engine part (Kind.engine)", k.Name)
		}
	}
}
