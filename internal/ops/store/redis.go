package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
)

// RedisStore keeps the operations' state in the Redis replicas share,
// with the same buckets, keys and versioned record bytes as the bbolt file
// (Store): one hash per bucket and the schema in a meta hash, all under
// one hash tag so that an Apply is one script even on a Redis Cluster. It
// has the methods of the tracker's state store. Records have no expiry:
// the tracker deletes them after their retention, as it does in its file.
type RedisStore struct {
	c       *sharedredis.Client
	buckets map[string]bool
	// fence, when set, is the lease every write requires (see RedisOptions).
	fence *sharedredis.Lease
	// marker is the state's marker at the open: every write requires it
	// (see openScript).
	marker string
}

// RedisOptions configure OpenRedis; they mean what Options do.
type RedisOptions struct {
	Schema   string
	Upgrades []string
	Buckets  []string
	// Fence, when set, is the lease of the one replica that may write:
	// every Apply checks, in the same atomic step, that it still holds it,
	// so a replica that lost it (cut off from Redis, paused) cannot write
	// over its successor's state. Its name must be "agent", whose key
	// shares the state's hash slot.
	Fence *sharedredis.Lease
	// Known is the state's marker this replica saw last ("" none): a state
	// whose marker is another one, or that has none, was lost
	// (*LostStateError).
	Known string
}

// AgentLease is the name of the lease whose holder runs the agent job
// gateway and writes its state.
const AgentLease = "agent"

// openScript checks the state's marker and stamps its schema. KEYS[1] is
// the meta hash; ARGV[1] the marker the replica knows ("" none), ARGV[2] a
// new marker for a state without one ("" to look only, not stamp),
// ARGV[3] the schema, ARGV[4..] the upgrades. It answers {"ok", marker},
// {"lost", lost marker} or {"schema", stored schema}.
//
// The marker is a random id written with the state. A replica that knew a
// marker and finds another one, or none, has found the state replaced or
// gone (FLUSHALL, a Redis without persistence restarted): it marks the
// state lost, in Redis, so that every replica refuses it (even one that
// never saw the old marker) until an operator accepts or re-imports it
// (AcceptLostState, ImportState), which writes a new marker that
// "supersedes" the lost one.
var openScript = sharedredis.NewScript(`
local m = redis.call('HMGET', KEYS[1], 'id', 'lost', 'supersedes', 'schema')
local id, lost, sup, cur = m[1], m[2], m[3], m[4]
if lost then return {'lost', lost} end
if ARGV[1] ~= '' and id ~= ARGV[1] and not (id and sup == ARGV[1]) then
  redis.call('HSET', KEYS[1], 'lost', ARGV[1])
  return {'lost', ARGV[1]}
end
if ARGV[2] == '' then return {'ok', id or ''} end
if cur and cur ~= ARGV[3] then
  local ok = false
  for i = 4, #ARGV do if ARGV[i] == cur then ok = true end end
  if not ok then return {'schema', cur} end
end
if not id then id = ARGV[2] end
redis.call('HSET', KEYS[1], 'schema', ARGV[3], 'id', id)
return {'ok', id}
`)

// LostStateError means the agent state in Redis lost the data it was
// written with (its marker changed or vanished): Redis restarted without
// its data, or was flushed. Acknowledged jobs and Idempotency-Keys are
// gone, so the gateway must not run on it until an operator decides.
type LostStateError struct {
	// Where names the state (RedisStore.Path).
	Where string
}

func (e *LostStateError) Error() string {
	return "agent state in Redis " + e.Where + " was lost (Redis restarted without its data, or was flushed): its jobs and Idempotency-Keys are gone, " +
		"so the agent job gateway refuses jobs until an operator runs `mintlify_exporter state accept-empty` or `mintlify_exporter state import FILE` " +
		"(docs/operations.md, \"Agent state lost in Redis\")"
}

// ErrStateLost is what a *LostStateError matches with errors.Is.
var ErrStateLost = errors.New("agent state in Redis lost")

// Is makes errors.Is(err, ErrStateLost) true.
func (e *LostStateError) Is(target error) bool { return target == ErrStateLost }

// runOpen runs openScript; stamp is false to look only.
func runOpen(ctx context.Context, c *sharedredis.Client, known string, stamp bool, schema string, upgrades []string) (kind, value string, err error) {
	fresh := ""
	if stamp {
		fresh = rand.Text()
	}
	err = c.Call(ctx, sharedredis.OpStoreApply, func(ctx context.Context) (bool, error) {
		args := append([]any{known, fresh, schema}, anySlice(upgrades)...)
		v, err := sharedredis.AsStrings(openScript.Run(ctx, c, []string{metaKey(c)}, args...))
		if err != nil {
			return false, err
		}
		if len(v) != 2 {
			return false, fmt.Errorf("open script answered %d values, want 2", len(v))
		}
		kind, value = v[0], v[1]
		return false, nil
	})
	return kind, value, err
}

// CheckRedis compares the marker of the agent state in Redis with known,
// the one this replica last saw ("" none), without stamping anything. It
// answers the marker to remember ("" when there is no state yet), or a
// *LostStateError when the state is marked lost, or is found lost now (it
// is then marked lost for every replica). Every replica calls it on every
// round of the lease, so the loss is noticed even by replicas that do not
// run the gateway.
//
// With a *LostStateError it answers the marker the state was marked lost
// from, to remember in place of known: the operator's accept or import
// supersedes that one, so every replica takes the accepted state, also
// one that knew another marker (one it stamped on the emptied Redis
// before another replica noticed the loss) or none; and should Redis
// lose the lost mark too before the operator decides, the replica still
// finds the state lost.
func CheckRedis(ctx context.Context, c *sharedredis.Client, known string) (string, error) {
	kind, value, err := runOpen(ctx, c, known, false, "", nil)
	if err != nil {
		return known, fmt.Errorf("agent state in Redis: %w", err)
	}
	if kind == "lost" {
		return value, &LostStateError{Where: statePath(c)}
	}
	return value, nil
}

// OpenRedis checks and stamps the schema of the state in c, and its marker
// against opts.Known. It fails when the state there is of another schema
// than opts.Schema or opts.Upgrades, when it was lost (a *LostStateError;
// see CheckRedis), or when Redis does not answer.
func OpenRedis(ctx context.Context, c *sharedredis.Client, opts RedisOptions) (*RedisStore, error) {
	if opts.Schema == "" {
		return nil, errors.New("agent state in Redis: a schema is required")
	}
	if opts.Fence != nil && opts.Fence.Name != AgentLease {
		return nil, fmt.Errorf("agent state in Redis: fenced by lease %q, want %q", opts.Fence.Name, AgentLease)
	}
	s := &RedisStore{c: c, buckets: bucketSet(opts.Buckets), fence: opts.Fence}
	kind, value, err := runOpen(ctx, c, opts.Known, true, opts.Schema, opts.Upgrades)
	switch {
	case err != nil:
		return nil, fmt.Errorf("agent state in Redis: %w", err)
	case kind == "lost":
		return nil, &LostStateError{Where: s.Path()}
	case kind != "ok":
		return nil, fmt.Errorf("agent state in Redis %s: schema version %q, this exporter understands %q", s.Path(), value, opts.Schema)
	}
	s.marker = value
	return s, nil
}

// Marker is the state's marker this store was opened with: a replica
// remembers it, to notice a loss at its next CheckRedis or OpenRedis.
func (s *RedisStore) Marker() string { return s.marker }

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func metaKey(c *sharedredis.Client) string { return c.Key("state:{agent}", "meta") }

func bucketKey(c *sharedredis.Client, bucket string) string {
	return c.Key("state:{agent}", "bucket", bucket)
}

// Path names the state for logs and errors: the Redis and the key prefix.
func (s *RedisStore) Path() string { return statePath(s.c) }

func statePath(c *sharedredis.Client) string { return c.Name(c.Key("state:{agent}")) }

// Apply makes the changes atomically (one script, run as one step): when it
// returns nil they are all in Redis; when it fails they are either all
// there or none is (a connection lost after the call leaves the outcome
// unknown, as a crash during an fsync does for a file). A Value nil
// deletes the key. It writes nothing, and fails with a *LostStateError,
// once the state's marker is no longer the one it was opened with (the
// state was lost under it), and with ErrLeaseLost once its fence lease is
// gone.
func (s *RedisStore) Apply(ops ...Op) error {
	for _, op := range ops {
		if !s.buckets[op.Bucket] {
			return fmt.Errorf("agent state in Redis: no bucket %q", op.Bucket)
		}
	}
	return s.apply(ops)
}

// applyScript applies ARGV[4..], in groups of four (index into KEYS of the
// bucket's hash, kind "s" to set or "d" to delete, field, value), if the
// meta hash KEYS[1] holds marker ARGV[1] and is not marked lost (else -1),
// and if the fence lease KEYS[2] holds ARGV[2] (ARGV[3] "1": fenced; else
// 0).
var applyScript = sharedredis.NewScript(`
local m = redis.call('HMGET', KEYS[1], 'id', 'lost')
if m[1] ~= ARGV[1] or m[2] then return -1 end
if ARGV[3] == '1' and redis.call('GET', KEYS[2]) ~= ARGV[2] then return 0 end
for i = 4, #ARGV, 4 do
  local key = KEYS[tonumber(ARGV[i])]
  if ARGV[i+1] == 'd' then redis.call('HDEL', key, ARGV[i+2]) else redis.call('HSET', key, ARGV[i+2], ARGV[i+3]) end
end
return 1
`)

func (s *RedisStore) apply(ops []Op) error {
	keys := []string{metaKey(s.c), metaKey(s.c)}
	args := []any{s.marker, "", "0"}
	if s.fence != nil {
		keys[1], args[1] = s.c.Leases().Fence(*s.fence)
		args[2] = "1"
	}
	index := map[string]int{}
	for _, op := range ops {
		i, ok := index[op.Bucket]
		if !ok {
			keys = append(keys, bucketKey(s.c, op.Bucket))
			i = len(keys)
			index[op.Bucket] = i
		}
		kind, value := "s", op.Value
		if op.Value == nil {
			kind, value = "d", []byte{}
		}
		args = append(args, i, kind, op.Key, value)
	}
	written := func(v any) bool { return v == int64(1) }
	n, err := sharedredis.AsInt(s.c.RunReplicated(context.Background(), sharedredis.OpStoreApply, applyScript, written, keys, args...))
	switch {
	case err != nil:
		return err
	case n == -1:
		return &LostStateError{Where: s.Path()}
	case n == 0:
		return fmt.Errorf("agent state in Redis: lease %s (token %d): %w: another replica runs the gateway now", s.fence.Name, s.fence.Token, sharedredis.ErrLeaseLost)
	}
	return nil
}

// ForEachIn calls fn for every entry of bucket in key order, as the bbolt
// store does.
func (s *RedisStore) ForEachIn(bucket string, fn func(key, value []byte) error) error {
	if !s.buckets[bucket] {
		return fmt.Errorf("agent state in Redis: no bucket %q", bucket)
	}
	all := map[string]string{}
	err := s.c.Call(context.Background(), sharedredis.OpStoreRead, func(ctx context.Context) (bool, error) {
		kv, err := sharedredis.AsStrings(s.c.Do(ctx, "HGETALL", bucketKey(s.c, bucket)))
		if err != nil {
			return false, err
		}
		if len(kv)%2 != 0 {
			return false, fmt.Errorf("HGETALL answered %d values, want pairs", len(kv))
		}
		for i := 0; i < len(kv); i += 2 {
			all[kv[i]] = kv[i+1]
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(all)) {
		if err := fn([]byte(k), []byte(all[k])); err != nil {
			return err
		}
	}
	return nil
}

// Len is the number of entries of the jobs bucket.
func (s *RedisStore) Len() (int, error) {
	var n int64
	err := s.c.Call(context.Background(), sharedredis.OpStoreRead, func(ctx context.Context) (bool, error) {
		var err error
		n, err = sharedredis.AsInt(s.c.Do(ctx, "HLEN", bucketKey(s.c, Jobs)))
		return false, err
	})
	return int(n), err
}

// Close does nothing: the Client belongs to the caller.
func (s *RedisStore) Close() error { return nil }

// CheckFile is nil: there is no file that could be replaced under the
// store.
func (s *RedisStore) CheckFile() error { return nil }

// Replaced is false, for the same reason.
func (s *RedisStore) Replaced() bool { return false }

// Stalled is false: every call to Redis ends within the client's timeout.
func (s *RedisStore) Stalled() bool { return false }
