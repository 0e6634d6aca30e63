package exporter

import (
	"errors"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/orgs"
)

// applier makes a configuration the running one across the subsystems
// that take one, prepare-then-commit: everything that can fail, in every
// subsystem, is done before anything changes, so that a failed reload
// changes nothing (the old projects exported, no new one followed).
type applier struct {
	// load reads the configuration and its keys again.
	load func() (*config.Config, error)
	// cluster is the running cluster section, which a reload cannot
	// change.
	cluster config.Cluster
	orgs    *orgs.Set
	jobs    *jobsPart
	// current is the configuration running, to log what a reload changed.
	current *config.Config
	logger  log.Logger
}

// apply prepares cfg for the organizations, then for the jobs (whose
// prepare, last, fails and changes nothing or succeeds), and only then
// commits both; commits cannot fail.
func (a *applier) apply(cfg *config.Config) error {
	pending, err := a.orgs.Prepare(cfg)
	if err != nil {
		return err
	}
	if err := a.jobs.prepare(cfg); err != nil {
		pending.Abandon()
		return err
	}
	planned := a.orgs.Planned()
	pending.Commit()
	a.jobs.commit(cfg)
	if a.current != nil && a.logger != nil {
		level.Info(a.logger).Log(append([]any{"msg", "configuration applied: what changed"}, changes(a.current, cfg, planned, a.orgs.Planned())...)...)
	}
	a.current = cfg
	return nil
}

// reload reads the configuration again and applies it (SIGHUP, POST
// /-/reload).
func (a *applier) reload() error {
	next, err := a.load()
	if err != nil {
		return err
	}
	if !next.Cluster.Equal(a.cluster) {
		return errors.New("cluster: a reload cannot change the cluster section; restart the exporter for it")
	}
	return a.apply(next)
}
