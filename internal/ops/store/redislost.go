package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
)

// What an operator does about agent state lost in Redis (see CheckRedis):
// accept it as it is now (AcceptLostState), or copy a state file into it
// (ImportState), from a backup that ExportState wrote or a single
// exporter's --agent.state-file. Both end with a new marker that
// supersedes the lost one, so the replicas that knew the lost one take the
// state again.

// acceptScript clears the lost mark of meta KEYS[1] and writes marker
// ARGV[1], superseding the lost one, and schema ARGV[2] when given; it
// answers the lost marker, or false when the state was not marked lost.
var acceptScript = sharedredis.NewScript(`
local lost = redis.call('HGET', KEYS[1], 'lost')
if not lost then return false end
redis.call('HDEL', KEYS[1], 'lost')
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'supersedes', lost)
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'schema', ARGV[2]) end
return lost
`)

// AcceptLostState accepts the agent state in Redis as it is now, after a
// loss: the replicas run the gateway on it again. What the lost state held
// is gone (the jobs are no longer followed, a retry with an old
// Idempotency-Key creates a new job). It reports false, and changes
// nothing, when the state is not marked lost.
func AcceptLostState(ctx context.Context, c *sharedredis.Client) (bool, error) {
	return accept(ctx, c, "")
}

func accept(ctx context.Context, c *sharedredis.Client, schema string) (bool, error) {
	var accepted bool
	err := c.Call(ctx, sharedredis.OpStoreApply, func(ctx context.Context) (bool, error) {
		_, err := acceptScript.Run(ctx, c, []string{metaKey(c)}, rand.Text(), schema)
		if errors.Is(err, sharedredis.Nil) {
			return true, nil
		}
		accepted = err == nil
		return false, err
	})
	if err != nil {
		return false, fmt.Errorf("agent state in Redis %s: %w", statePath(c), err)
	}
	return accepted, nil
}

// holdScript marks meta KEYS[1] lost ("import") unless it is marked lost
// already, so that no replica starts the gateway while an import writes;
// it refuses (answers the marker) a state in use: one with a marker, not
// marked lost. It answers "" when the import may go on.
var holdScript = sharedredis.NewScript(`
local m = redis.call('HMGET', KEYS[1], 'id', 'lost')
if m[2] then return '' end
if m[1] then return m[1] end
redis.call('HSET', KEYS[1], 'lost', 'import')
return ''
`)

// ImportState copies every entry of the state file at path (opened with
// opts, which must name the tracker's buckets) into the agent state in
// Redis, then lets the replicas run the gateway on it. It refuses a state
// in use (one that is not marked lost and has a marker): import into a
// lost state, or into a Redis no replica has used yet. It answers the
// number of entries copied by bucket.
func ImportState(ctx context.Context, c *sharedredis.Client, path string, opts Options) (map[string]int, error) {
	src, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	var inUse string
	err = c.Call(ctx, sharedredis.OpStoreApply, func(ctx context.Context) (bool, error) {
		var err error
		inUse, err = sharedredis.AsString(holdScript.Run(ctx, c, []string{metaKey(c)}))
		return inUse != "", err
	})
	if err != nil {
		return nil, fmt.Errorf("agent state in Redis %s: %w", statePath(c), err)
	}
	if inUse != "" {
		return nil, fmt.Errorf("agent state in Redis %s is in use (not marked lost): import only into a lost state or a Redis no replica has used yet", statePath(c))
	}
	counts := map[string]int{}
	for _, b := range append([]string{Jobs}, opts.Buckets...) {
		fields := map[string]any{}
		if err := src.ForEachIn(b, func(k, v []byte) error {
			fields[string(k)] = slices.Clone(v)
			return nil
		}); err != nil {
			return counts, fmt.Errorf("state file %s: reading %s: %w", path, b, err)
		}
		if err := writeBucket(ctx, c, b, fields); err != nil {
			return counts, err
		}
		counts[b] = len(fields)
	}
	_, err = accept(ctx, c, opts.Schema)
	return counts, err
}

// writeBucket sets fields of bucket, a bounded number per call.
func writeBucket(ctx context.Context, c *sharedredis.Client, bucket string, fields map[string]any) error {
	keys := slices.Sorted(maps.Keys(fields))
	for chunk := range slices.Chunk(keys, 500) {
		args := make([]any, 0, 2+2*len(chunk))
		args = append(args, "HSET", bucketKey(c, bucket))
		for _, k := range chunk {
			args = append(args, k, fields[k])
		}
		err := c.Call(ctx, sharedredis.OpStoreApply, func(ctx context.Context) (bool, error) {
			_, err := c.Do(ctx, args...)
			return false, err
		})
		if err != nil {
			return fmt.Errorf("agent state in Redis %s: writing %s: %w", statePath(c), bucket, err)
		}
	}
	return nil
}

// ExportState copies the agent state in Redis into a new state file at
// path (which must not exist), a backup that ImportState takes back. It
// answers the number of entries copied by bucket.
func ExportState(ctx context.Context, c *sharedredis.Client, path string, opts Options) (map[string]int, error) {
	if err := refuseExisting(path); err != nil {
		return nil, err
	}
	src := &RedisStore{c: c, buckets: bucketSet(opts.Buckets)}
	dst, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for b := range src.buckets {
		var ops []Op
		if err := src.ForEachIn(b, func(k, v []byte) error {
			ops = append(ops, Op{Bucket: b, Key: string(k), Value: slices.Clone(v)})
			return nil
		}); err != nil {
			_ = dst.Close()
			return counts, err
		}
		for chunk := range slices.Chunk(ops, 500) {
			if err := dst.Apply(chunk...); err != nil {
				_ = dst.Close()
				return counts, fmt.Errorf("state file %s: %w", path, err)
			}
		}
		counts[b] = len(ops)
	}
	if err := dst.Close(); err != nil {
		return counts, fmt.Errorf("state file %s: %w", path, err)
	}
	return counts, nil
}

func refuseExisting(path string) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s exists already; give a new file", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
