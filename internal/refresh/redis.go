package refresh

import (
	"context"
	"fmt"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
)

// RedisWalks share one organization's refresh plan between replicas
// through the Redis they share: a lease per demand for the walk, and the
// snapshots as versioned blobs, the lease's fencing token as version (a
// walker that lost its lease cannot publish over its successor). It
// implements Shared.
type RedisWalks struct {
	leases *sharedredis.Leases
	blobs  *redisBlobs
	org    string
	owner  string
}

// NewRedisWalks returns organization org's shared plan in c for the lease
// owner id.
func NewRedisWalks(c *sharedredis.Client, org, owner string) *RedisWalks {
	return &RedisWalks{leases: c.Leases(), blobs: newRedisBlobs(c), org: org, owner: owner}
}

var _ Shared = (*RedisWalks)(nil)

func (w *RedisWalks) leaseName(key string) string { return "walk:" + w.org + ":" + key }
func (w *RedisWalks) blobKey(key string) string   { return "analytics:" + w.org + ":" + key }

// Claim implements Shared: the lease is held (sharedredis.Leases.Hold)
// until release, and the returned context ends when it is lost: the
// walker must stop then, since another replica may take it over.
func (w *RedisWalks) Claim(ctx context.Context, key string) (context.Context, int64, func(), error) {
	walk, lease, release, ok, err := w.leases.Hold(ctx, w.leaseName(key), w.owner)
	switch {
	case err != nil:
		return nil, 0, nil, err
	case !ok:
		return nil, 0, nil, fmt.Errorf("walk of %s held by %s: %w", key, lease.Owner, ErrHeld)
	}
	return walk, lease.Token, release, nil
}

// Publish implements Shared.
func (w *RedisWalks) Publish(ctx context.Context, key string, version int64, data []byte, ttl time.Duration) error {
	_, err := w.blobs.Put(ctx, w.blobKey(key), version, data, ttl)
	return err
}

// Versions implements Shared.
func (w *RedisWalks) Versions(ctx context.Context, keys []string) ([]int64, error) {
	bk := make([]string, len(keys))
	for i, k := range keys {
		bk[i] = w.blobKey(k)
	}
	return w.blobs.Versions(ctx, bk)
}

// Fetch implements Shared.
func (w *RedisWalks) Fetch(ctx context.Context, key string) ([]byte, int64, bool, error) {
	return w.blobs.Get(ctx, w.blobKey(key))
}
