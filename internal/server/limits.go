package server

import (
	"sync"
	"time"
)

// badCache remembers credentials that failed, so that the same wrong
// password sent again is refused without a bcrypt check. Bounded: when
// full, an arbitrary entry makes room.
type badCache struct {
	mu      sync.Mutex
	max     int
	entries map[[32]byte]string // credential digest -> the hash it failed against
}

func newBadCache(max int) *badCache {
	return &badCache{max: max, entries: map[[32]byte]string{}}
}

func (c *badCache) has(d [32]byte, hash string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.entries[d]
	return ok && h == hash
}

func (c *badCache) add(d [32]byte, hash string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[d] = hash
}

// clientLimiter is a token bucket per client address for unverified
// login attempts. Bounded: when it tracks max clients, those whose bucket
// is full again are forgotten; if none is, a new client is not limited
// (the check slots still bound the work).
type clientLimiter struct {
	mu       sync.Mutex
	burst    float64
	interval time.Duration
	max      int
	buckets  map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newClientLimiter(burst int, interval time.Duration, max int) *clientLimiter {
	return &clientLimiter{burst: float64(burst), interval: interval, max: max, buckets: map[string]*bucket{}}
}

// refill brings b to now.
func (l *clientLimiter) refill(b *bucket, now time.Time) {
	if now.After(b.at) {
		b.tokens = min(l.burst, b.tokens+float64(now.Sub(b.at))/float64(l.interval))
		b.at = now
	}
}

// take takes a token for client, or says how long until one is back.
func (l *clientLimiter) take(client string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[client]
	if b == nil {
		if len(l.buckets) >= l.max {
			for k, old := range l.buckets {
				if l.refill(old, now); old.tokens >= l.burst {
					delete(l.buckets, k)
				}
			}
			if len(l.buckets) >= l.max {
				return true, 0
			}
		}
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[client] = b
	}
	l.refill(b, now)
	if b.tokens < 1 {
		return false, time.Duration((1 - b.tokens) * float64(l.interval))
	}
	b.tokens--
	return true, 0
}

// give returns a token taken for an attempt that succeeded or was never
// checked.
func (l *clientLimiter) give(client string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.buckets[client]; b != nil {
		l.refill(b, now)
		b.tokens = min(l.burst, b.tokens+1)
	}
}
