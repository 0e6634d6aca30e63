package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/mintlify-exporter/mintlify_exporter/internal/tracker/store"
)

// StateStore keeps the agent job tracker's state in Redis, with the same
// buckets, keys and versioned record bytes as its bbolt file: one hash per
// bucket and the schema in a meta hash, all under one hash tag so that an
// Apply is one MULTI/EXEC even on a Redis Cluster. It has the methods of
// the tracker's state store. Records have no expiry: the tracker deletes
// them after their retention, as it does in its file.
type StateStore struct {
	c       *Client
	buckets map[string]bool
}

// StateOptions configure OpenStateStore; they mean what store.Options do.
type StateOptions struct {
	Schema   string
	Upgrades []string
	Buckets  []string
}

// schemaScript stamps KEYS[1] with schema ARGV[1] unless it holds another
// one that is not in ARGV[2:] (the upgrades); it answers the stored one.
var schemaScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'schema')
if cur and cur ~= ARGV[1] then
  local ok = false
  for i = 2, #ARGV do if ARGV[i] == cur then ok = true end end
  if not ok then return cur end
end
redis.call('HSET', KEYS[1], 'schema', ARGV[1])
return ARGV[1]
`)

// OpenStateStore checks and stamps the schema of the state in Redis. It
// fails when the state there is of another schema than opts.Schema or
// opts.Upgrades, or when Redis does not answer.
func (c *Client) OpenStateStore(ctx context.Context, opts StateOptions) (*StateStore, error) {
	if opts.Schema == "" {
		return nil, errors.New("agent state in Redis: a schema is required")
	}
	s := &StateStore{c: c, buckets: map[string]bool{store.Jobs: true}}
	for _, b := range opts.Buckets {
		s.buckets[b] = true
	}
	var stored string
	err := c.call(ctx, opStoreApply, func(ctx context.Context) (bool, error) {
		args := append([]any{opts.Schema}, anySlice(opts.Upgrades)...)
		var err error
		stored, err = schemaScript.Run(ctx, c.rdb, []string{s.metaKey()}, args...).Text()
		return false, err
	})
	if err != nil {
		return nil, fmt.Errorf("agent state in Redis: %w", err)
	}
	if stored != opts.Schema {
		return nil, fmt.Errorf("agent state in Redis %s: schema version %q, this exporter understands %q", s.Path(), stored, opts.Schema)
	}
	return s, nil
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func (s *StateStore) metaKey() string { return s.c.key("state:{agent}", "meta") }

func (s *StateStore) bucketKey(bucket string) string {
	return s.c.key("state:{agent}", "bucket", bucket)
}

// Path names the state for logs and errors: the Redis and the key prefix.
func (s *StateStore) Path() string {
	return "redis://" + s.c.addr + "/" + strconv.Itoa(s.c.db) + " " + s.c.key("state:{agent}")
}

// Apply makes the changes atomically (one MULTI/EXEC): when it returns nil
// they are all in Redis; when it fails they are either all there or none
// is (a connection lost after EXEC leaves the outcome unknown, as a
// crash during an fsync does for a file). A Value nil deletes the key.
func (s *StateStore) Apply(ops ...store.Op) error {
	for _, op := range ops {
		if !s.buckets[op.Bucket] {
			return fmt.Errorf("agent state in Redis: no bucket %q", op.Bucket)
		}
	}
	return s.c.call(context.Background(), opStoreApply, func(ctx context.Context) (bool, error) {
		_, err := s.c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for _, op := range ops {
				if op.Value == nil {
					p.HDel(ctx, s.bucketKey(op.Bucket), op.Key)
				} else {
					p.HSet(ctx, s.bucketKey(op.Bucket), op.Key, op.Value)
				}
			}
			return nil
		})
		return false, err
	})
}

// ForEachIn calls fn for every entry of bucket in key order, as the bbolt
// store does.
func (s *StateStore) ForEachIn(bucket string, fn func(key, value []byte) error) error {
	if !s.buckets[bucket] {
		return fmt.Errorf("agent state in Redis: no bucket %q", bucket)
	}
	var all map[string]string
	err := s.c.call(context.Background(), opStoreRead, func(ctx context.Context) (bool, error) {
		var err error
		all, err = s.c.rdb.HGetAll(ctx, s.bucketKey(bucket)).Result()
		return false, err
	})
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := fn([]byte(k), []byte(all[k])); err != nil {
			return err
		}
	}
	return nil
}

// Len is the number of entries of the jobs bucket.
func (s *StateStore) Len() (int, error) {
	var n int64
	err := s.c.call(context.Background(), opStoreRead, func(ctx context.Context) (bool, error) {
		var err error
		n, err = s.c.rdb.HLen(ctx, s.bucketKey(store.Jobs)).Result()
		return false, err
	})
	return int(n), err
}

// Close does nothing: the Client belongs to the caller.
func (s *StateStore) Close() error { return nil }

// CheckFile is nil: there is no file that could be replaced under the
// store.
func (s *StateStore) CheckFile() error { return nil }

// Replaced is false, for the same reason.
func (s *StateStore) Replaced() bool { return false }

// Stalled is false: every call to Redis ends within the client's timeout.
func (s *StateStore) Stalled() bool { return false }
