package orgs

import (
	"context"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// The agent job and deployment calls go out with the key of the
// project's organization: the Set is the tracker's Upstream and
// DeploymentUpstream.

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
	c, err := s.followClient(project)
	if err != nil {
		return nil, err
	}
	return c.GetJob(ctx, project, id)
}

// followClient is the client that follows project's operations: its
// organization's, or for a project a reload removed, its last one's.
func (s *Set) followClient(project string) (*apiclient.Client, error) {
	c, err := s.Client(project)
	if err != nil {
		s.mu.RLock()
		c = s.former[project]
		s.mu.RUnlock()
		if c == nil {
			return nil, err
		}
	}
	return c, nil
}

// TriggerUpdate triggers a deployment with project's organization's key.
func (s *Set) TriggerUpdate(ctx context.Context, project string) (*apiclient.Triggered, error) {
	c, err := s.Client(project)
	if err != nil {
		return nil, err
	}
	return c.TriggerUpdate(ctx, project)
}

// TriggerPreview triggers a preview with project's organization's key.
func (s *Set) TriggerPreview(ctx context.Context, project, branch string) (*apiclient.Triggered, error) {
	c, err := s.Client(project)
	if err != nil {
		return nil, err
	}
	return c.TriggerPreview(ctx, project, branch)
}

// DeploymentStatus reads a deployment of project with its organization's
// key (as GetJob, after a reload removed the project too).
func (s *Set) DeploymentStatus(ctx context.Context, project, id string) (*apiclient.Deployment, error) {
	c, err := s.followClient(project)
	if err != nil {
		return nil, err
	}
	return c.DeploymentStatus(ctx, project, id)
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

// TriggerAutomation triggers an automation run with project's
// organization's key.
func (s *Set) TriggerAutomation(ctx context.Context, project, automation string) (apiclient.AutomationTrigger, error) {
	c, err := s.Client(project)
	if err != nil {
		return apiclient.AutomationTrigger{}, err
	}
	return c.TriggerAutomation(ctx, project, automation)
}
