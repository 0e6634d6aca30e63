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
	// fence, when set, is the lease every write requires (see StateOptions).
	fence *Lease
}

// StateOptions configure OpenStateStore; they mean what store.Options do.
type StateOptions struct {
	Schema   string
	Upgrades []string
	Buckets  []string
	// Fence, when set, is the lease of the one replica that may write:
	// every Apply checks, in the same atomic step, that it still holds it,
	// so a replica that lost it (cut off from Redis, paused) cannot write
	// over its successor's state. Its name must be "agent", whose key
	// shares the state's hash slot.
	Fence *Lease
}

// AgentLease is the name of the lease whose holder runs the agent job
// gateway and writes its state.
const AgentLease = "agent"

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
	if opts.Fence != nil && opts.Fence.Name != AgentLease {
		return nil, fmt.Errorf("agent state in Redis: fenced by lease %q, want %q", opts.Fence.Name, AgentLease)
	}
	s := &StateStore{c: c, buckets: map[string]bool{store.Jobs: true}, fence: opts.Fence}
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
	if s.fence != nil {
		return s.applyFenced(ops)
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

// fencedApplyScript applies ARGV[2..], in groups of four (index into KEYS
// of the bucket's hash, kind "s" to set or "d" to delete, field, value), if
// KEYS[1] (the fence lease) still holds ARGV[1]; else it answers 0.
var fencedApplyScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
for i = 2, #ARGV, 4 do
  local key = KEYS[tonumber(ARGV[i])]
  if ARGV[i+1] == 'd' then redis.call('HDEL', key, ARGV[i+2]) else redis.call('HSET', key, ARGV[i+2], ARGV[i+3]) end
end
return 1
`)

func (s *StateStore) applyFenced(ops []store.Op) error {
	keys := []string{s.c.Leases().keys(s.fence.Name)[0]}
	index := map[string]int{}
	args := []any{s.fence.value()}
	for _, op := range ops {
		i, ok := index[op.Bucket]
		if !ok {
			keys = append(keys, s.bucketKey(op.Bucket))
			i = len(keys)
			index[op.Bucket] = i
		}
		kind, value := "s", op.Value
		if op.Value == nil {
			kind, value = "d", []byte{}
		}
		args = append(args, i, kind, op.Key, value)
	}
	var held bool
	err := s.c.call(context.Background(), opStoreApply, func(ctx context.Context) (bool, error) {
		n, err := fencedApplyScript.Run(ctx, s.c.rdb, keys, args...).Int()
		held = n == 1
		return !held, err
	})
	switch {
	case err != nil:
		return err
	case !held:
		return fmt.Errorf("agent state in Redis: lease %s (token %d): %w: another replica runs the gateway now", s.fence.Name, s.fence.Token, ErrLeaseLost)
	}
	return nil
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
