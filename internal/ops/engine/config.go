package engine

import (
	"errors"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
)

// Tuning that is not worth a flag.
const (
	// maxPollBackoff caps an operation's backoff after poll errors.
	maxPollBackoff = 5 * time.Minute
	// LostAfter404s is how many 404s in a row declare an operation lost.
	// More than one, because one read right after its start may not be
	// visible everywhere yet; the retries back off like any other error.
	LostAfter404s = 3
	// minPollInterval keeps a typo from hammering the API.
	minPollInterval = 10 * time.Millisecond
	// maxConcurrentPolls bounds MaxConcurrentPolls.
	maxConcurrentPolls = 1000
)

// Config configures the Engine. Start from Defaults: a zero value is
// never replaced by a default, it means what the field says it means.
type Config struct {
	// Projects are the project ids the engine follows and counts.
	// Operations of other projects found in the state are left there
	// untouched (and come back if the project is configured again).
	// Distinct, non-empty.
	Projects []string
	// PollInterval is how often each operation not final is polled (at
	// least 10ms).
	PollInterval time.Duration
	// MaxConcurrentPolls bounds concurrent reads upstream, per kind (1 to
	// 1000).
	MaxConcurrentPolls int
	// ArchiveWatch is how long after completion a completed agent job is
	// still re-checked, so that a later archive is counted; 0 disables it.
	ArchiveWatch time.Duration
	// Retention is how long an operation is kept after it reached a final
	// status (or was declared lost); then it is deleted from the state.
	Retention time.Duration
	// StatePath is the bbolt state file; its directory is created.
	StatePath string
	// Store, when set, keeps the state instead of the file at StatePath:
	// the replicas' shared Redis (see Layout). Close calls its Close.
	Store Store
	// LockTimeout is how long opening the state file waits for another
	// process to release it before failing.
	LockTimeout time.Duration
	// PollTimeout bounds one read upstream including the client's retries.
	PollTimeout time.Duration
	// StateWriteTimeout bounds one write of the state (a frozen or hung
	// filesystem blocks it indefinitely): a start whose intent is not
	// written within it is refused (503), and Close waits at most this
	// long for writes under way.
	StateWriteTimeout time.Duration
	// Kinds are the kinds followed (nil: every registered kind).
	Kinds []Kind
	// On are the kinds whose routes are served, by name: their series of
	// every project are pre-created. Operations of every kind in the state
	// are followed either way (to their end).
	On map[string]bool
	// Takes says whether a project takes a kind's operations in the
	// configuration, and the values of its key (config.Project.Takes);
	// read per call, so that a reload changes it. nil: none does.
	Takes func(kind, project string) ([]string, bool)
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// BeforeStateWrite, when not nil, runs in every state file write
	// before it commits (tests block it to play a frozen filesystem).
	BeforeStateWrite func()
}

// Defaults returns the configuration the exporter's flags start from.
func Defaults() Config {
	return Config{
		PollInterval:       10 * time.Second,
		MaxConcurrentPolls: 4,
		ArchiveWatch:       24 * time.Hour,
		Retention:          7 * 24 * time.Hour,
		// Relative to the working directory, so `go run .` and `make run`
		// keep their state next to the checkout; in a container the working
		// directory should be a writable volume.
		StatePath:         "mintlify_exporter_agent.db",
		LockTimeout:       2 * time.Second,
		PollTimeout:       30 * time.Second,
		StateWriteTimeout: 5 * time.Second,
	}
}

// Validate reports the first invalid field as a *config.FieldError.
func (c *Config) Validate() error {
	return config.First(
		config.Field("Projects", config.Projects(c.Projects)),
		config.Field("PollInterval", config.AtLeast(c.PollInterval, minPollInterval)),
		config.Field("MaxConcurrentPolls", config.InRange(c.MaxConcurrentPolls, 1, maxConcurrentPolls)),
		config.Field("ArchiveWatch", config.AtLeast(c.ArchiveWatch, 0)),
		config.Field("Retention", config.Positive(c.Retention)),
		config.Field("StatePath", nonEmpty(c.StatePath)),
		config.Field("LockTimeout", config.Positive(c.LockTimeout)),
		config.Field("PollTimeout", config.Positive(c.PollTimeout)),
		config.Field("StateWriteTimeout", config.Positive(c.StateWriteTimeout)),
	)
}

func nonEmpty(s string) error {
	if s == "" {
		return errors.New("must not be empty")
	}
	return nil
}

// flagNames names the flag of each Config field that has one.
var flagNames = map[string]string{
	"PollInterval":       "--agent.poll-interval",
	"MaxConcurrentPolls": "--agent.max-concurrent-polls",
	"ArchiveWatch":       "--agent.archive-watch",
	"Retention":          "--agent.retention",
	"StatePath":          "--agent.state-file",
}

// Flags are the engine's settings from the command line.
type Flags struct {
	Config Config
	// StateFileSet: --agent.state-file was given (the sandbox otherwise
	// keeps its state in a temporary directory).
	StateFileSet bool
}

// RegisterFlags adds the engine's flags to app, defaulting to Defaults().
// Their names keep the "agent." prefix of the first kind the engine
// followed.
func RegisterFlags(app config.Flagger) *Flags {
	f := &Flags{Config: Defaults()}
	c := &f.Config
	config.DurationVar(app, "agent.poll-interval", "How often each operation followed (of every kind) is polled while it is not final.", &c.PollInterval)
	config.IntVar(app, "agent.max-concurrent-polls", "Maximum number of polls in flight at once, per kind of operation: a kind whose reads stall delays no other.", &c.MaxConcurrentPolls)
	config.DurationVar(app, "agent.archive-watch", "How long a completed job is re-checked, slowly, so that a later archive is counted. 0 disables the re-checks.", &c.ArchiveWatch)
	config.DurationVar(app, "agent.retention", "How long final operations (of every kind) are kept before they are forgotten.", &c.Retention)
	app.Flag("agent.state-file", "File where the operations followed (of every kind) and each organization's analytics ledger, beside it, are persisted across restarts, relative to the working directory; with --mintlify.sandbox the ledger is always temporary, and with no value the file too.").
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
