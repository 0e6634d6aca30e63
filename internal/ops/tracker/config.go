package tracker

import (
	"errors"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
)

// Tuning that is not worth a flag.
const (
	// maxPollBackoff caps the per-job backoff after poll errors.
	maxPollBackoff = 5 * time.Minute
	// lostAfter404s is how many 404s in a row declare a job lost. More than
	// one, because a job read right after its creation may not be visible
	// everywhere yet; the retries back off like any other error.
	lostAfter404s = 3
	// archiveWatchMaxInterval caps the re-check interval of completed jobs.
	archiveWatchMaxInterval = time.Hour
	// minPollInterval keeps a typo from hammering the API.
	minPollInterval = 10 * time.Millisecond
	// maxConcurrentPolls bounds MaxConcurrentPolls.
	maxConcurrentPolls = 1000
)

// Config configures the Tracker. Start from Defaults: a zero value is
// never replaced by a default, it means what the field says it means.
type Config struct {
	// Projects are the project ids the tracker polls and counts. Jobs of
	// other projects found in the state file are left there untouched (and
	// come back if the project is configured again). Distinct, non-empty.
	Projects []string
	// PollInterval is how often each active job is polled (at least 10ms).
	PollInterval time.Duration
	// MaxConcurrentPolls bounds concurrent get-job calls (1 to 1000).
	MaxConcurrentPolls int
	// ArchiveWatch is how long after completion a completed job is still
	// re-checked, so that a later archive is counted; 0 disables it. The
	// re-check interval grows with the time since completion: a tenth of
	// it, at least 30×PollInterval (5m at the default 10s) and at most 1h;
	// about 50 get-job calls per job over the default 24h.
	ArchiveWatch time.Duration
	// Retention is how long a job is kept after it reached a terminal
	// status (or was declared lost); then it is deleted from the state file.
	Retention time.Duration
	// StatePath is the bbolt state file; its directory is created.
	StatePath string
	// Store, when set, keeps the state instead of the file at StatePath:
	// the replicas' shared Redis (see Layout). The tracker's Close calls
	// its Close.
	Store StateStore
	// LockTimeout is how long opening the state file waits for another
	// process to release it before failing.
	LockTimeout time.Duration
	// PollTimeout bounds one get-job call including the client's retries.
	PollTimeout time.Duration
	// StateWriteTimeout bounds one write of the state file (a frozen or
	// hung filesystem blocks it indefinitely): a create or follow-up whose
	// intent is not written within it is refused (503), and Close waits at
	// most this long for writes under way.
	StateWriteTimeout time.Duration
	// Deployments: the deployment gateway is on, so the deployments'
	// series of every project are pre-created. Deployments are followed
	// either way (those in the state are followed to their end).
	Deployments bool
	// StaticExports: the static export routes are on, so the exports'
	// series of every project are pre-created.
	StaticExports bool
	// Automations, when not nil, says of a project the automations the
	// configuration names (label values) and whether it takes automation
	// triggers; their series are then pre-created.
	Automations func(project string) (named []string, on bool)
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	// beforeStateWrite, when not nil, runs in every state file write
	// before it commits (tests block it to play a frozen filesystem).
	beforeStateWrite func()
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

// archiveCheckInterval is the re-check interval of a job completed since
// ago: ago/10, clamped to [30×PollInterval, 1h] (and never below one poll
// interval, should the clamp invert).
func (c *Config) archiveCheckInterval(ago time.Duration) time.Duration {
	lo := 30 * c.PollInterval
	d := min(max(ago/10, lo), archiveWatchMaxInterval)
	return max(d, c.PollInterval)
}
