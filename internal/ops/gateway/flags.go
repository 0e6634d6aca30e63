package gateway

import (
	"fmt"
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
	// names are the flags of Config's fields, for ValidateFlags.
	names map[string]string
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
	f.Config.StartLimits = map[string]int{}
	f.names = map[string]string{"MaxPromptBytes": "--agent.max-prompt-bytes"}
	for _, k := range engine.Kinds() {
		if d := k.Declare(); d.Routes.StartLimit != nil {
			l := d.Routes.StartLimit
			app.Flag(l.Flag, l.Help).Default(strconv.Itoa(l.PerHour)).SetValue(startLimitValue{flag: l.Flag, kind: d.Name, limits: f.Config.StartLimits})
			f.names[startLimitField(d.Name)] = "--" + l.Flag
		}
	}
	return f
}

// ValidateFlags is Validate with each error naming its flag.
func (f *Flags) ValidateFlags() error {
	c := f.Config
	return config.Rename(c.Validate(), f.names)
}

// startLimitValue is the flag of a kind's start limit
// (engine.Routes.StartLimit): it sets the kind's entry of
// Config.StartLimits.
type startLimitValue struct {
	flag, kind string
	limits     map[string]int
}

func (v startLimitValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("--%s: %q is not a whole number", v.flag, s)
	}
	v.limits[v.kind] = n
	return nil
}

func (v startLimitValue) String() string { return strconv.Itoa(v.limits[v.kind]) }
