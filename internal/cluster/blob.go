package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Blobs are versioned values in Redis, for what every replica serves (a
// snapshot of a source): a write only lands when its version is newer than
// the stored one, so a replica that lost a lease mid-walk cannot put an
// older snapshot over a newer one. Each blob expires (a snapshot nobody
// refreshes any more should not be served forever).
type Blobs struct{ c *Client }

// Blobs returns the client's blobs.
func (c *Client) Blobs() *Blobs { return &Blobs{c: c} }

// putScript writes the hash KEYS[1] {v = ARGV[1], d = ARGV[2]} with an
// expiry of ARGV[3] ms unless it holds a version at least as new.
// Versions are compared as zero-padded decimal strings: Lua's numbers are
// doubles and would round a nanosecond timestamp.
var putScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'v')
if cur and cur >= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'd', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`)

// Put stores data under key as version (at least 0) for ttl, unless the
// stored version is the same or newer; written says which.
func (b *Blobs) Put(ctx context.Context, key string, version int64, data []byte, ttl time.Duration) (written bool, err error) {
	switch {
	case key == "":
		return false, errors.New("blob: empty key")
	case version < 0:
		return false, fmt.Errorf("blob %s: version must not be negative, got %d", key, version)
	case ttl < time.Millisecond:
		return false, fmt.Errorf("blob %s: needs an expiry of at least 1ms, got %s", key, ttl)
	}
	err = b.c.call(ctx, opBlobPut, func(ctx context.Context) (bool, error) {
		n, err := putScript.Run(ctx, b.c.rdb, []string{b.c.key("blob", key)}, versionString(version), data, ttl.Milliseconds()).Int()
		written = n == 1
		return !written, err
	})
	return written, err
}

// Get reads key's data and version; ok is false when there is none.
func (b *Blobs) Get(ctx context.Context, key string) (data []byte, version int64, ok bool, err error) {
	err = b.c.call(ctx, opBlobGet, func(ctx context.Context) (bool, error) {
		v, err := b.c.rdb.HMGet(ctx, b.c.key("blob", key), "v", "d").Result()
		if err != nil {
			return false, err
		}
		vs, _ := v[0].(string)
		ds, _ := v[1].(string)
		if v[0] == nil || v[1] == nil {
			return false, nil
		}
		if version, err = strconv.ParseInt(vs, 10, 64); err != nil {
			return false, fmt.Errorf("blob %s: unreadable version in Redis", key)
		}
		data, ok = []byte(ds), true
		return false, nil
	})
	return data, version, ok, err
}

func versionString(v int64) string { return fmt.Sprintf("%020d", v) }

// Versions reads the versions of keys in one round trip, 0 where a key has
// none: replicas poll them to learn which snapshots changed, and fetch only
// those.
func (b *Blobs) Versions(ctx context.Context, keys []string) ([]int64, error) {
	out := make([]int64, len(keys))
	err := b.c.call(ctx, opBlobGet, func(ctx context.Context) (bool, error) {
		pipe := b.c.rdb.Pipeline()
		cmds := make([]*redis.StringCmd, len(keys))
		for i, k := range keys {
			cmds[i] = pipe.HGet(ctx, b.c.key("blob", k), "v")
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return false, err
		}
		for i, cmd := range cmds {
			if errors.Is(cmd.Err(), redis.Nil) {
				continue
			}
			v, err := strconv.ParseInt(cmd.Val(), 10, 64)
			if err != nil {
				return false, fmt.Errorf("blob %s: unreadable version in Redis", keys[i])
			}
			out[i] = v
		}
		return false, nil
	})
	return out, err
}
