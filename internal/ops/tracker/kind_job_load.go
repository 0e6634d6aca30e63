package tracker

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// jobsLoaded is what the agent jobs' load read, before it is merged.
type jobsLoaded struct {
	entries map[string]*entry
	intents map[string]*intent // creates of unknown outcome
	// active and watched count the jobs polled at once and the terminal
	// ones under archive watch.
	active, watched int
}

// load reads the jobs, their create intents and their follow-ups' intents
// (kindEngine.load).
func (k jobKind) load(l *loadedState, want func(project string) bool, now time.Time) (loadedKind, error) {
	s := k.s
	jl := &jobsLoaded{entries: map[string]*entry{}, intents: map[string]*intent{}}
	err := s.store.ForEachIn(store.Jobs, func(key, v []byte) error {
		s.loadJob(l, jl, want, now, key, v)
		return nil
	})
	if err != nil {
		return loadedKind{}, fmt.Errorf("agent state file %s: reading: %w", s.store.Path(), err)
	}
	maps.Copy(l.keys, idempotencyKeys(jl.entries))
	err = s.store.ForEachIn(bucketIntents, func(key, v []byte) error {
		s.loadCreateIntent(l, jl, want, key, v)
		return nil
	})
	if err != nil {
		return loadedKind{}, fmt.Errorf("agent state file %s: reading create intents: %w", s.store.Path(), err)
	}
	messages, err := s.readMessageIntents(want)
	if err != nil {
		return loadedKind{}, err
	}
	unknown := len(jl.intents)
	return loadedKind{
		mergeLocked: func() {
			maps.Copy(s.entries, jl.entries)
			for key, in := range jl.intents {
				addIntentLocked(s, createIntents, key, in)
			}
		},
		logKV: []any{"jobs", len(jl.entries), "active", jl.active, "archive_watch", jl.watched, "unknown_creates", unknown,
			"unknown_messages", len(messages)},
		after: func() {
			s.settleMessageIntents(messages)
			if unknown > 0 {
				level.Warn(s.logger).Log("msg", "creates of unknown outcome: sent upstream by an earlier run that stopped before recording the answer; "+
					"the jobs may exist untracked. List them with GET /api/v2/agent/{project}/unknown-creates, then track or dismiss each (see alerts/RUNBOOK.md)",
					"unknown_creates", unknown, "path", s.store.Path())
			}
		},
	}, nil
}

// loadJob reads the record under key k, unless unreadable or of a project
// not wanted, and schedules its first poll.
func (s *Tracker) loadJob(l *loadedState, jl *jobsLoaded, want func(project string) bool, now time.Time, k, v []byte) {
	rec, err := decodeRecord(v)
	if err != nil {
		s.skipUnreadable(l, "record", k, err)
		return
	}
	if !want(rec.Project) {
		l.foreign++
		return
	}
	boundJob(&rec.Job)
	e := &entry{rec: rec}
	if e.polled(now, &s.cfg) {
		if apiclient.IsTerminal(rec.Job.Status) {
			// Spread the re-checks of watched jobs instead of
			// re-checking them all at once after a restart.
			iv := s.cfg.archiveCheckInterval(now.Sub(rec.TerminalAt))
			e.nextPoll = now.Add(rand.N(iv))
			jl.watched++
		} else {
			jl.active++
		}
	}
	if _, ok := rec.pendingMessage(); ok {
		// A follow-up of unknown outcome not yet re-checked (the
		// process stopped first): at once.
		e.recheck, e.nextPoll = true, time.Time{}
	}
	jl.entries[string(k)] = e
}

// idempotencyKeys are the keys of the creates and follow-ups of entries.
func idempotencyKeys(entries map[string]*entry) map[string]keyRef {
	keys := map[string]keyRef{}
	for k, e := range entries {
		if e.rec.IdemKey != "" {
			keys[storeKey(e.rec.Project, e.rec.IdemKey)] = keyRef{job: k}
		}
		for _, m := range e.rec.Messages {
			if m.IdemKey != "" {
				keys[storeKey(e.rec.Project, m.IdemKey)] = keyRef{msgJob: k}
			}
		}
	}
	return keys
}

// loadCreateIntent reads the create intent under key k, unless unreadable
// or of a project not wanted: a create of unknown outcome, or one to
// delete when its job is tracked.
func (s *Tracker) loadCreateIntent(l *loadedState, jl *jobsLoaded, want func(project string) bool, k, v []byte) {
	in, err := decodeIntent(v)
	if err != nil {
		s.skipUnreadable(l, "create intent", k, err)
		return
	}
	if !want(in.Project) {
		return
	}
	if ref, ok := l.keys[storeKey(in.Project, in.IdemKey)]; ok && in.IdemKey != "" && ref.job != "" &&
		jl.entries[ref.job].rec.RequestHash == in.RequestHash {
		// Its job is tracked (a salvaged file can hold both): the
		// outcome is known.
		l.resolved = append(l.resolved, store.Op{Bucket: bucketIntents, Key: string(k)})
		return
	}
	jl.intents[string(k)] = &intent{rec: in}
}
