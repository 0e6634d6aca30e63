package sources

import (
	"maps"
	"slices"

	"github.com/mintlify-exporter/mintlify_exporter/internal/visitors"
)

// Spec is one source as a project's configuration asks for it.
type Spec struct {
	// Name is the source's name (NameVisitors, ...).
	Name string
	// Windows are the source's date windows (nil = the project's).
	Windows []visitors.Window
	// Settings are the source's own settings for this project, by key
	// (Config.Settings).
	Settings map[string]int
}

// Equal reports whether two specs ask for the same walks.
func (s Spec) Equal(o Spec) bool {
	return s.Name == o.Name && slices.Equal(s.Windows, o.Windows) && maps.Equal(s.Settings, o.Settings)
}
