package orgs

import (
	"context"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// The agent job calls go out with the key of the job's project's
// organization: the Set is the tracker's Upstream.

// CreateJobWithStatus creates a job with project's organization's key.
func (s *Set) CreateJobWithStatus(ctx context.Context, project, prompt string) (*apiclient.Job, int, error) {
	c, err := s.Client(project)
	if err != nil {
		return nil, 0, err
	}
	return c.CreateJobWithStatus(ctx, project, prompt)
}

// GetJob reads a job with project's organization's key. A project a
// reload removed keeps the client of its last organization for this (its
// tracked jobs are polled to their end), with that organization's current
// key while it is configured.
func (s *Set) GetJob(ctx context.Context, project, id string) (*apiclient.Job, error) {
	c, err := s.Client(project)
	if err != nil {
		s.mu.RLock()
		c = s.former[project]
		s.mu.RUnlock()
		if c == nil {
			return nil, err
		}
	}
	return c.GetJob(ctx, project, id)
}

// SendMessage sends a follow-up with project's organization's key.
func (s *Set) SendMessage(ctx context.Context, project, id, prompt string) (*apiclient.Job, int, error) {
	c, err := s.Client(project)
	if err != nil {
		return nil, 0, err
	}
	return c.SendMessage(ctx, project, id, prompt)
}

// ThrottledUntil is always zero: the tracker asks it without a project,
// and one organization's Retry-After pause must not hold back another's
// calls. Each client still keeps its own pause: a call to a paused
// organization fails at once with an *apiclient.ThrottledError, no request
// sent.
func (s *Set) ThrottledUntil(string) time.Time { return time.Time{} }
