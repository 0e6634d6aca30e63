package agent

import (
	"errors"
	"fmt"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/gateway"
)

// Defaults of the --agent.* flags.
const (
	DefaultPollInterval       = 10 * time.Second
	DefaultMaxConcurrentPolls = 4
	DefaultArchiveWatch       = 24 * time.Hour
	DefaultRetention          = 7 * 24 * time.Hour
	DefaultMaxPromptBytes     = gateway.DefaultMaxPromptBytes
	// DefaultStatePath is relative to the working directory, so `go run .`
	// and `make run` keep their state next to the checkout; in a container
	// the working directory should be a writable volume.
	DefaultStatePath = "mintlify_exporter_agent.db"
	// DefaultCreateLimitPerHour is the API's documented create limit.
	DefaultCreateLimitPerHour = 100
	// DefaultPollTimeout bounds one get-job call, retries included.
	DefaultPollTimeout = 30 * time.Second
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
)

// Config configures the agent job Service. Zero values mean the default.
type Config struct {
	// Projects are the project ids the gateway accepts and the tracker
	// polls. Jobs of other projects found in the state file are left there
	// untouched (and come back if the project is configured again).
	Projects []string
	// PollInterval is how often each active job is polled.
	PollInterval time.Duration
	// MaxConcurrentPolls bounds concurrent get-job calls.
	MaxConcurrentPolls int
	// ArchiveWatch is how long after completion a completed job is still
	// re-checked, so that a later archive is counted. The re-check interval
	// grows with the time since completion: a tenth of it, at least
	// 30×PollInterval (5m at the default 10s) and at most 1h; about 50
	// get-job calls per job over the default 24h. Negative disables it.
	ArchiveWatch time.Duration
	// Retention is how long a job is kept after it reached a terminal
	// status (or was declared lost); then it is deleted from the state file.
	Retention time.Duration
	// StatePath is the bbolt state file; its directory is created.
	StatePath string
	// MaxPromptBytes bounds a create request's body (413 beyond it).
	MaxPromptBytes int64
	// CreateLimitPerHour is the local create limit per project (429 beyond
	// it, nothing sent upstream). Every create sent upstream counts,
	// whatever the answer, because the API counts requests; only a create
	// refused before sending (Retry-After still running) gives its slot
	// back. Negative disables the local limit.
	CreateLimitPerHour int
	// PollTimeout bounds one get-job call including the client's retries.
	PollTimeout time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() error {
	if len(c.Projects) == 0 {
		return errors.New("agent: no projects configured")
	}
	seen := map[string]bool{}
	projects := make([]string, 0, len(c.Projects))
	for _, p := range c.Projects {
		if p == "" {
			return errors.New("agent: empty project id")
		}
		if !seen[p] {
			seen[p] = true
			projects = append(projects, p)
		}
	}
	c.Projects = projects
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.PollInterval < 10*time.Millisecond {
		return fmt.Errorf("agent: poll interval %s is too short", c.PollInterval)
	}
	if c.MaxConcurrentPolls == 0 {
		c.MaxConcurrentPolls = DefaultMaxConcurrentPolls
	}
	if c.MaxConcurrentPolls < 1 {
		return fmt.Errorf("agent: max concurrent polls must be >= 1, got %d", c.MaxConcurrentPolls)
	}
	if c.ArchiveWatch == 0 {
		c.ArchiveWatch = DefaultArchiveWatch
	}
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	}
	if c.Retention < 0 {
		return fmt.Errorf("agent: retention must be positive, got %s", c.Retention)
	}
	if c.StatePath == "" {
		c.StatePath = DefaultStatePath
	}
	if c.MaxPromptBytes == 0 {
		c.MaxPromptBytes = DefaultMaxPromptBytes
	}
	if c.MaxPromptBytes < 1 {
		return fmt.Errorf("agent: max prompt bytes must be >= 1, got %d", c.MaxPromptBytes)
	}
	if c.CreateLimitPerHour == 0 {
		c.CreateLimitPerHour = DefaultCreateLimitPerHour
	}
	if c.PollTimeout <= 0 {
		c.PollTimeout = DefaultPollTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
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
