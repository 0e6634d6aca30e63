package budget

import (
	"context"
	"fmt"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
)

// RedisLedger is one organization's rolling-window analytics ledger in Redis,
// shared by every replica: a sorted set of send times (Redis's own clock,
// in microseconds) that a Lua script prunes, counts and adds to in one
// step, so that no two replicas can both take the last slot. A Config with
// Shared set to it pays every request here.
type RedisLedger struct {
	c *sharedredis.Client
	// keys: the send times, the pause after a 429, the halving after one.
	keys []string
}

var _ SharedLedger = (*RedisLedger)(nil)

// NewRedisLedger is organization's ledger in c. The organization name is
// part of the keys (a hash tag, so that its keys stay together on a Redis
// Cluster).
func NewRedisLedger(c *sharedredis.Client, organization string) *RedisLedger {
	tag := "budget:{" + organization + "}"
	return &RedisLedger{c: c, keys: []string{c.Key(tag, "sent"), c.Key(tag, "paused"), c.Key(tag, "halved")}}
}

// ledgerScript prunes, counts and (ARGV[4] == "1") takes, on Redis's clock.
// A pause or halving is in force for the longer of what Redis holds (other
// replicas' 429s) and what the caller holds (its own). It answers
// {taken, spent, effective limit, µs until N more fit, µs paused, µs halved}.
// Members are "seconds.micros-i" with i making them unique; the score is
// the time. The set expires a hold after its last send, so an organization
// that is gone leaves nothing behind.
var ledgerScript = sharedredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit, hold, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local function int(x) return string.format('%.0f', x) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', int(now - hold))
local function left(key, mine)
  local ms = redis.call('PTTL', key)
  if ms > 0 then return math.max(ms * 1000, mine) end
  return mine
end
local paused = left(KEYS[2], tonumber(ARGV[5]))
local halved = left(KEYS[3], tonumber(ARGV[6]))
local eff = limit
if halved > 0 then eff = math.max(1, math.floor(limit / 2)) end
local spent = redis.call('ZCARD', KEYS[1])
local taken = 0
if ARGV[4] == '1' and paused == 0 and spent < eff then
  local i = 0
  while redis.call('ZADD', KEYS[1], 'NX', int(now), t[1] .. '.' .. t[2] .. '-' .. i) == 0 do i = i + 1 end
  redis.call('PEXPIRE', KEYS[1], int(math.ceil(hold / 1000) + 1000))
  spent = spent + 1
  taken = 1
end
local function slot(lim)
  local k = math.min(math.max(n, 1), lim)
  local over = spent - (lim - k)
  if over <= 0 then return 0 end
  local e = redis.call('ZRANGE', KEYS[1], over - 1, over - 1, 'WITHSCORES')
  return math.max(0, tonumber(e[2]) + hold - now)
end
local at = slot(eff)
if halved > 0 and at > halved then at = math.max(halved, slot(limit)) end
at = math.max(at, paused)
return {taken, spent, eff, at, paused, halved}
`)

// rejectScript extends the pause to ARGV[1] ms (never shortens it) and
// restarts the halving for ARGV[2] ms, both with an expiry.
var rejectScript = sharedredis.NewScript(`
local p = tonumber(ARGV[1])
if p > 0 and redis.call('PTTL', KEYS[1]) < p then redis.call('SET', KEYS[1], '1', 'PX', p) end
local h = tonumber(ARGV[2])
if h > 0 then redis.call('SET', KEYS[2], '1', 'PX', h) end
return 1
`)

// Take implements SharedLedger.
func (l *RedisLedger) Take(ctx context.Context, q LedgerQuery) (LedgerState, error) {
	return l.run(ctx, sharedredis.OpLedgerTake, q, true)
}

// Read implements SharedLedger.
func (l *RedisLedger) Read(ctx context.Context, q LedgerQuery) (LedgerState, error) {
	return l.run(ctx, sharedredis.OpLedgerRead, q, false)
}

func (l *RedisLedger) run(ctx context.Context, op string, q LedgerQuery, take bool) (LedgerState, error) {
	var st LedgerState
	if q.Limit < 1 || q.Hold <= 0 {
		return st, fmt.Errorf("ledger: limit %d and hold %s must be positive", q.Limit, q.Hold)
	}
	takeArg := "0"
	if take {
		takeArg = "1"
	}
	err := l.c.Call(ctx, op, func(ctx context.Context) (bool, error) {
		v, err := sharedredis.AsInts(ledgerScript.Run(ctx, l.c, l.keys, q.Limit, micros(q.Hold), max(q.N, 1), takeArg,
			micros(q.PausedFor), micros(q.HalvedFor)))
		if err != nil {
			return false, err
		}
		if len(v) != 6 {
			return false, fmt.Errorf("ledger script answered %d values, want 6", len(v))
		}
		st = LedgerState{Taken: v[0] == 1, Spent: int(v[1]), Effective: int(v[2]),
			NextFree: fromMicros(v[3]), PausedFor: fromMicros(v[4]), HalvedFor: fromMicros(v[5])}
		return take && !st.Taken, nil
	})
	return st, err
}

// Reject implements SharedLedger.
func (l *RedisLedger) Reject(ctx context.Context, pause, halve time.Duration) error {
	return l.c.Call(ctx, sharedredis.OpLedgerReject, func(ctx context.Context) (bool, error) {
		_, err := rejectScript.Run(ctx, l.c, l.keys[1:], pause.Milliseconds(), halve.Milliseconds())
		return false, err
	})
}

func micros(d time.Duration) int64 { return max(0, d.Microseconds()) }

func fromMicros(us int64) time.Duration { return time.Duration(us) * time.Microsecond }
