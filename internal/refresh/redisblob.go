package refresh

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
)

// MaxRedisBlobBytes bounds a blob: Put refuses a larger one and Get does not
// read one (a snapshot of the exporter's bounded series is a few MB; a
// larger value is not one of ours, and would be read again and again).
const MaxRedisBlobBytes = 32 << 20

// redisBlobs are versioned values in Redis, for what every replica serves (a
// snapshot of a source): a write only lands when its version is newer than
// the stored one, so a replica that lost a lease mid-walk cannot put an
// older snapshot over a newer one. Each blob expires (a snapshot nobody
// refreshes any more should not be served forever).
type redisBlobs struct {
	c *sharedredis.Client
	// badVersions are the blob versions of another program seen, by key,
	// so that each is logged once.
	badVersions sync.Map
}

func newRedisBlobs(c *sharedredis.Client) *redisBlobs { return &redisBlobs{c: c} }

// putScript writes the hash KEYS[1] {v = ARGV[1], d = ARGV[2]} with an
// expiry of ARGV[3] ms unless it holds a version at least as new.
// Versions are compared as zero-padded decimal strings: Lua's numbers are
// doubles and would round a nanosecond timestamp. A stored version that is
// not one this exporter writes (20 digits, at most int64's largest: so a
// leading 0) is overwritten: it must not block the demand until it expires.
var putScript = sharedredis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'v')
if cur and #cur == 20 and string.match(cur, '^0%d+$') and cur >= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'd', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`)

// Put stores data under key as version (at least 0) for ttl, unless the
// stored version is the same or newer; written says which.
func (b *redisBlobs) Put(ctx context.Context, key string, version int64, data []byte, ttl time.Duration) (written bool, err error) {
	switch {
	case key == "":
		return false, errors.New("blob: empty key")
	case version < 0:
		return false, fmt.Errorf("blob %s: version must not be negative, got %d", key, version)
	case ttl < time.Millisecond:
		return false, fmt.Errorf("blob %s: needs an expiry of at least 1ms, got %s", key, ttl)
	case len(data) > MaxRedisBlobBytes:
		return false, fmt.Errorf("blob %s: %d bytes, more than the %d bytes the replicas read", key, len(data), MaxRedisBlobBytes)
	}
	err = b.c.Call(ctx, sharedredis.OpBlobPut, func(ctx context.Context) (bool, error) {
		n, err := sharedredis.AsInt(putScript.Run(ctx, b.c, []string{b.c.Key("blob", key)}, versionString(version), data, ttl.Milliseconds()))
		written = n == 1
		return !written, err
	})
	return written, err
}

// getScript reads the hash KEYS[1]: false when it has no version, else
// {version, length of the data}, and the data only when it is at most
// ARGV[1] bytes. One step, so that the size checked is the size of the
// data read; and a blob over the bound never crosses the wire (go-redis
// reads a reply whole, with no bound of its own).
var getScript = sharedredis.NewScript(`
local v = redis.call('HGET', KEYS[1], 'v')
if not v then return false end
local n = redis.call('HSTRLEN', KEYS[1], 'd')
if n > tonumber(ARGV[1]) then return {v, n} end
return {v, n, redis.call('HGET', KEYS[1], 'd') or ''}
`)

// Get reads key's data and version; ok is false when there is none. A blob
// that is not one of ours (a version that is not a number of ours, data
// larger than MaxRedisBlobBytes, which is not read) is an error that wraps
// ErrUnreadableSnapshot, with its version when it has one: Redis
// answered, so it does not count as unreachable.
func (b *redisBlobs) Get(ctx context.Context, key string) (data []byte, version int64, ok bool, err error) {
	var bad error
	err = b.c.Call(ctx, sharedredis.OpBlobGet, func(ctx context.Context) (bool, error) {
		r, err := sharedredis.AsArray(getScript.Run(ctx, b.c, []string{b.c.Key("blob", key)}, MaxRedisBlobBytes))
		if errors.Is(err, sharedredis.Nil) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if len(r) < 2 {
			return false, fmt.Errorf("get script answered %d values, want 2 or 3", len(r))
		}
		v, _ := r[0].(string)
		n, _ := r[1].(int64)
		if version, bad = b.parseVersion(key, v); bad != nil {
			return true, nil
		}
		if n > MaxRedisBlobBytes || len(r) < 3 {
			bad = fmt.Errorf("blob %s version %d: %d bytes, more than the %d bytes a replica reads: not read (%w)", key, version, n, MaxRedisBlobBytes, ErrUnreadableSnapshot)
			return true, nil
		}
		d, _ := r[2].(string)
		data, ok = []byte(d), true
		return false, nil
	})
	if err == nil && bad != nil {
		return nil, version, false, bad
	}
	return data, version, ok, err
}

// parseVersion reads a stored version; one that is not a number this
// exporter writes (it overflows int64, say) is an error that says so,
// logged once per key and value.
func (b *redisBlobs) parseVersion(key, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err == nil && n >= 0 {
		return n, nil
	}
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	err = fmt.Errorf("blob %s: version %q in Redis is not a version this exporter writes (a non-negative int64): ignored, and overwritten by the next publish (%w)",
		key, v, ErrUnreadableSnapshot)
	if old, loaded := b.badVersions.Swap(key, v); !loaded || old != v {
		level.Warn(b.c.Logger()).Log("msg", "shared snapshot with a version of another program: ignored", "err", err)
	}
	return 0, err
}

func versionString(v int64) string { return fmt.Sprintf("%020d", v) }

// Versions reads the versions of keys in one round trip, 0 where a key has
// none: replicas poll them to learn which snapshots changed, and fetch only
// those.
func (b *redisBlobs) Versions(ctx context.Context, keys []string) ([]int64, error) {
	out := make([]int64, len(keys))
	err := b.c.Call(ctx, sharedredis.OpBlobGet, func(ctx context.Context) (bool, error) {
		if len(keys) == 0 {
			return false, nil
		}
		cmds := make([][]any, len(keys))
		for i, k := range keys {
			cmds[i] = []any{"HGET", b.c.Key("blob", k), "v"}
		}
		r, err := b.c.Pipeline(ctx, cmds)
		if err != nil {
			return false, err
		}
		for i := range r {
			v, err := sharedredis.AsString(r[i].Val, r[i].Err)
			if errors.Is(err, sharedredis.Nil) {
				continue
			}
			if err != nil {
				return false, fmt.Errorf("HGET: %w", err)
			}
			// A version of another program reads as none: it blocks
			// neither the others nor the publish that overwrites it.
			out[i], _ = b.parseVersion(keys[i], v)
		}
		return false, nil
	})
	return out, err
}
