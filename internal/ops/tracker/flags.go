package tracker

import (
	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
)

// flagNames names the flag of each Config field that has one.
var flagNames = map[string]string{
	"PollInterval":       "--agent.poll-interval",
	"MaxConcurrentPolls": "--agent.max-concurrent-polls",
	"ArchiveWatch":       "--agent.archive-watch",
	"Retention":          "--agent.retention",
	"StatePath":          "--agent.state-file",
}

// Flags are the tracker's settings from the command line.
type Flags struct {
	Config Config
	// StateFileSet: --agent.state-file was given (the sandbox otherwise
	// keeps its state in a temporary directory).
	StateFileSet bool
}

// RegisterFlags adds the tracker's flags to app, defaulting to Defaults().
func RegisterFlags(app config.Flagger) *Flags {
	f := &Flags{Config: Defaults()}
	c := &f.Config
	config.DurationVar(app, "agent.poll-interval", "How often each active agent job, deployment, static export and automation run is polled.", &c.PollInterval)
	config.IntVar(app, "agent.max-concurrent-polls", "Maximum number of agent job, deployment, static export and automation run polls in flight at once.", &c.MaxConcurrentPolls)
	config.DurationVar(app, "agent.archive-watch", "How long a completed job is re-checked, slowly, so that a later archive is counted. 0 disables the re-checks.", &c.ArchiveWatch)
	config.DurationVar(app, "agent.retention", "How long finished agent jobs, deployments, static exports and automation runs are kept before they are forgotten.", &c.Retention)
	app.Flag("agent.state-file", "File where tracked agent jobs, deployments, static exports and automation runs (and each organization's analytics ledger, beside it) are persisted across restarts, relative to the working directory; with --mintlify.sandbox the ledger is always temporary, and with no value the file too.").
		Default(c.StatePath).IsSetByUser(&f.StateFileSet).StringVar(&c.StatePath)
	return f
}

// ValidateFlags is Validate with each error naming its flag. Projects are
// set later, from the configuration, and not checked here.
func (f *Flags) ValidateFlags() error {
	c := f.Config
	c.Projects = nil
	return config.Rename(c.Validate(), flagNames)
}
