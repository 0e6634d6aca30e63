package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
)

// Walks share one organization's refresh plan between replicas: a lease
// per demand for the walk, and the snapshots as versioned blobs, the
// lease's fencing token as version (a walker that lost its lease cannot
// publish over its successor). It implements refresh.Shared.
//
// A walk's lease is renewed every third of the lease duration, so a replica
// that dies mid-walk frees its demands within one lease duration of its
// last renewal, and one failed renewal loses nothing.
type Walks struct {
	leases *Leases
	blobs  *Blobs
	org    string
	owner  string
	ttl    time.Duration
	// held counts the walk leases this process holds, for a gauge.
	held *atomic.Int64
}

// Walks returns organization org's shared plan for the lease owner id.
func (c *Client) Walks(org, owner string) *Walks {
	return &Walks{leases: c.Leases(), blobs: c.Blobs(), org: org, owner: owner, ttl: c.lease, held: &c.walksHeld}
}

var _ refresh.Shared = (*Walks)(nil)

func (w *Walks) leaseName(key string) string { return "walk:" + w.org + ":" + key }
func (w *Walks) blobKey(key string) string   { return "analytics:" + w.org + ":" + key }

// Claim implements refresh.Shared: the lease is renewed until release, and
// the returned context ends when a renewal finds it lost, or when its
// deadline passes without a renewal (Redis away): the walker must stop
// then, since another replica may take it over.
func (w *Walks) Claim(ctx context.Context, key string) (context.Context, int64, func(), error) {
	lease, ok, err := w.leases.Acquire(ctx, w.leaseName(key), w.owner, w.ttl)
	switch {
	case err != nil:
		return nil, 0, nil, err
	case !ok:
		return nil, 0, nil, fmt.Errorf("walk of %s held by %s: %w", key, lease.Owner, refresh.ErrHeld)
	}
	w.held.Add(1)
	walkCtx, cancel := context.WithCancelCause(ctx)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // owned by the claim: release stops and waits for it
		deadline := time.NewTimer(time.Until(lease.Deadline))
		defer deadline.Stop()
		renew := time.NewTicker(w.ttl / 3)
		defer renew.Stop()
		for {
			select {
			case <-stop:
				return
			case <-deadline.C:
				cancel(fmt.Errorf("walk lease of %s expired without a renewal: another replica may walk it", key))
				return
			case <-renew.C:
				next, err := w.leases.Renew(walkCtx, lease, w.ttl)
				if errors.Is(err, ErrLeaseLost) {
					cancel(err)
					return
				}
				if err == nil {
					lease = next
					deadline.Reset(time.Until(lease.Deadline))
				}
			}
		}
	})
	var once sync.Once
	release := func() {
		once.Do(func() {
			close(stop)
			wg.Wait()
			cancel(nil)
			w.held.Add(-1)
			// Released at once so that the next due walk need not wait for
			// the expiry; a failure only means it expires by itself.
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), w.leases.c.timeout)
			defer rcancel()
			_ = w.leases.Release(rctx, lease)
		})
	}
	return walkCtx, lease.Token, release, nil
}

// Publish implements refresh.Shared.
func (w *Walks) Publish(ctx context.Context, key string, version int64, data []byte, ttl time.Duration) error {
	_, err := w.blobs.Put(ctx, w.blobKey(key), version, data, ttl)
	return err
}

// Versions implements refresh.Shared.
func (w *Walks) Versions(ctx context.Context, keys []string) ([]int64, error) {
	bk := make([]string, len(keys))
	for i, k := range keys {
		bk[i] = w.blobKey(k)
	}
	return w.blobs.Versions(ctx, bk)
}

// Fetch implements refresh.Shared.
func (w *Walks) Fetch(ctx context.Context, key string) ([]byte, int64, bool, error) {
	return w.blobs.Get(ctx, w.blobKey(key))
}
