package gateway

import (
	"strconv"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
)

// Flags are the gateway's settings from the command line.
type Flags struct {
	Config Config
	// On are the kinds whose routes are served, by name: each kind's
	// flag (engine.Routes.Flag, --web.enable-...-api).
	On map[string]*bool
}

// Serves reports whether the gateway serves any kind's routes: the
// engine runs then.
func (f *Flags) Serves() bool {
	for _, on := range f.On {
		if *on {
			return true
		}
	}
	return false
}

// Kinds are the names of the kinds whose routes are served.
func (f *Flags) Kinds() map[string]bool {
	out := map[string]bool{}
	for name, on := range f.On {
		out[name] = *on
	}
	return out
}

// RegisterFlags adds the gateway's flags to app, every registered kind's
// among them, defaulting to Defaults().
func RegisterFlags(app config.Flagger) *Flags {
	f := &Flags{Config: Defaults(), On: map[string]*bool{}}
	for _, k := range engine.Kinds() {
		d := k.Declare()
		on := new(bool)
		app.Flag(d.Routes.Flag, d.Routes.Help).Default("false").BoolVar(on)
		f.On[d.Name] = on
	}
	config.BytesVar(app, "agent.max-prompt-bytes", "Largest request body (and so prompt) the gateway accepts for a job, e.g. 64KiB; larger ones get 413.", &f.Config.MaxPromptBytes)
	app.Flag("static-export.start-limit", "Static exports the gateway starts per project in any hour; more get 429 and nothing is sent (0: no local limit).").
		Default(strconv.Itoa(f.Config.ExportStartLimitPerHour)).IntVar(&f.Config.ExportStartLimitPerHour)
	return f
}

// ValidateFlags is Validate with each error naming its flag.
func (f *Flags) ValidateFlags() error {
	c := f.Config
	return config.Rename(c.Validate(), map[string]string{"MaxPromptBytes": "--agent.max-prompt-bytes", "ExportStartLimitPerHour": "--static-export.start-limit"})
}
