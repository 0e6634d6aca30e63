package exporter

import (
	"context"
	"path/filepath"
	"sync"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/orgs"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
	"github.com/mintlify-exporter/mintlify_exporter/internal/snapstore"
)

// stateDirs are where this run keeps its state: each organization's
// ledger beside the job state, but for the sandbox's, kept apart for this
// run (see fakeapi.SandboxStateDir). remove deletes the sandbox's.
func stateDirs(o *Options, sb *fakeapi.Sandbox) (ledgerDir string, trkCfg engine.Config, remove func(), err error) {
	trkCfg = o.Engine.Config
	ledgerDir, remove = filepath.Dir(trkCfg.StatePath), func() {}
	if sb == nil {
		return ledgerDir, trkCfg, remove, nil
	}
	dir, remove, err := fakeapi.SandboxStateDir()
	if err != nil {
		return "", trkCfg, nil, err
	}
	if !o.Engine.StateFileSet {
		trkCfg.StatePath = filepath.Join(dir, "agent.db")
	}
	return dir, trkCfg, remove, nil
}

// replicate, with replicas (shared is not nil), makes one walk per demand
// across them, and one replica (the primary) export what they share (see
// docs/operations.md): the election runs owned by wg until ctx ends. It
// returns this replica's owner id ("" without replicas).
func replicate(ctx context.Context, wg *sync.WaitGroup, shared *sharedredis.Client, settings *orgs.Settings) string {
	if shared == nil {
		return ""
	}
	owner := sharedredis.NewOwnerID()
	settings.Walks = func(org string) refresh.Shared { return refresh.NewRedisWalks(shared, org, owner) }
	wg.Go(func() { shared.RunPrimary(ctx, owner) })
	return owner
}

// newAnalytics returns the organizations (each its client, budget and
// plan), empty until a configuration applies, and the stop that ends
// their plans and closes their ledgers.
func newAnalytics(ctx context.Context, settings orgs.Settings, ledgerDir string, logger log.Logger) (*orgs.Set, func(), *snapstore.Root) {
	settings.LedgerDir = ledgerDir
	// So are what sources keep across restarts (the assistant's daily
	// conversation counts).
	settings.Refresh.StateDir = ledgerDir
	// And the snapshots, so that a restart serves them at once and walks
	// nothing before its time; replicas keep them in Redis instead.
	var snaps *snapstore.Root
	if settings.Walks == nil && ledgerDir != "" {
		snaps = snapstore.NewRoot(ledgerDir, logger)
		settings.Walks = func(org string) refresh.Shared { return snaps.Org(org) }
	}
	ctx, cancel := context.WithCancel(ctx) // the plans run until it ends
	set := orgs.New(ctx, settings, logger)
	return set, func() {
		cancel()
		set.Wait()
	}, snaps
}

// keepSnapshotsOf deletes the kept snapshots of the organizations cfg no
// longer has (nil snaps: none are kept).
func keepSnapshotsOf(snaps *snapstore.Root, cfg *config.Config, logger log.Logger) {
	if snaps == nil {
		return
	}
	names := make([]string, len(cfg.Organizations))
	for i, o := range cfg.Organizations {
		names[i] = o.Name
	}
	if err := snaps.KeepOrgs(names); err != nil {
		level.Warn(logger).Log("msg", "analytics snapshots of former organizations not deleted", "err", err)
	}
}
