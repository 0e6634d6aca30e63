package agent

import (
	"context"
	"slices"
	"strings"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/gateway"
)

// backend is the Service as the gateway sees it.
type backend struct{ s *Service }

var _ gateway.Backend = backend{}

// Create creates the job upstream, then writes it to the state file before
// returning, so that a 2xx from the gateway means the job survives kill -9.
// If the write fails the job is still tracked in memory (and written again
// at its next poll) and a *gateway.StateError is returned.
func (b backend) Create(ctx context.Context, project, prompt string) (*apiclient.Job, int, error) {
	s := b.s
	s.inflight.Add(1)
	defer s.inflight.Done()
	if until := s.api.ThrottledUntil(apiclient.EndpointCreateJob); !until.IsZero() {
		// Answer 429 at once instead of holding the client until the
		// API's Retry-After has passed.
		return nil, 0, &apiclient.ThrottledError{Endpoint: apiclient.EndpointCreateJob, Until: until}
	}
	job, code, err := s.api.CreateJobWithStatus(ctx, project, prompt)
	if err != nil {
		return nil, 0, err
	}
	at := s.cfg.Now()
	j := *job
	internJob(&j)
	rec, ev := transition(record{Project: project, Origin: originGateway, TrackedAt: at}, j, at, false)
	key := storeKey(project, j.ID)
	s.metrics.Submitted(project)
	e := &entry{rec: rec}
	if s.claim(key, e) != nil {
		return job, code, nil // tracked concurrently (and written) already
	}
	perr := s.persist(key, &rec)
	s.release(e, perr)
	if perr != nil {
		return nil, 0, &gateway.StateError{JobID: j.ID, Err: perr}
	}
	s.emit(project, ev)
	return job, code, nil
}

// Job returns a tracked job.
func (b backend) Job(project, id string) (gateway.JobView, bool) {
	s := b.s
	now := s.cfg.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.entries[storeKey(project, id)]
	if e == nil {
		return gateway.JobView{}, false
	}
	return e.view(now, &s.cfg), true
}

// Jobs lists a project's tracked jobs, newest first (createdAt, then id).
func (b backend) Jobs(project, status string) []gateway.JobView {
	s := b.s
	now := s.cfg.Now()
	s.mu.RLock()
	out := []gateway.JobView{}
	for _, e := range s.entries {
		if e.rec.Project != project || (status != "" && e.rec.viewStatus() != status) {
			continue
		}
		out = append(out, e.view(now, &s.cfg))
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b gateway.JobView) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out
}

// Track starts tracking a job created elsewhere after one get upstream. A
// job that is already terminal when first seen is stored as such but not
// counted as finished (this exporter did not see it finish).
func (b backend) Track(ctx context.Context, project, id string) (gateway.JobView, bool, error) {
	s := b.s
	s.inflight.Add(1)
	defer s.inflight.Done()
	key := storeKey(project, id)
	if v, ok := b.Job(project, id); ok {
		return v, false, nil
	}
	if until := s.api.ThrottledUntil(apiclient.EndpointGetJob); !until.IsZero() {
		return gateway.JobView{}, false, &apiclient.ThrottledError{Endpoint: apiclient.EndpointGetJob, Until: until}
	}
	job, err := s.api.GetJob(ctx, project, id)
	if err != nil {
		return gateway.JobView{}, false, err
	}
	at := s.cfg.Now()
	j := *job
	j.ID = id
	internJob(&j)
	rec, _ := transition(record{Project: project, Origin: originTrack, TrackedAt: at}, j, at, true)
	e := &entry{rec: rec, lastPolled: at}
	s.schedule(e, &rec, at, at)
	if old := s.claim(key, e); old != nil { // tracked concurrently
		s.mu.RLock()
		defer s.mu.RUnlock()
		return old.view(at, &s.cfg), false, nil
	}
	perr := s.persist(key, &rec)
	s.release(e, perr)
	s.mu.RLock()
	v := e.view(at, &s.cfg)
	s.mu.RUnlock()
	if perr != nil {
		return v, true, &gateway.StateError{JobID: id, Err: perr}
	}
	return v, true, nil
}
