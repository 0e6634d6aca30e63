package sharedredis

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/redis/go-redis/v9"
)

// sentinels is the dialer of go-redis's failover client: one sentinel is
// not trusted alone. go-redis asks one sentinel which Redis is the primary
// and dials it through here; this dials the primary a majority of the
// configured sentinels name, and only when it says it is the primary (ROLE
// answers master), so that a rogue or stale sentinel cannot send the
// replicas' writes to another Redis, or to a replica. go-redis dials the
// sentinels through here too: those configured as they are; any other
// address is its pick of the primary (a sentinel it discovered from the
// others reaches the primary then, and fails as a sentinel: only the
// configured ones are asked).
type sentinels struct {
	addrs  []string
	name   string
	voters []*redis.Client
	// role is how to reach a named Redis to ask its ROLE: the options of
	// the connections to the primary.
	role   redis.Options
	dialer func(ctx context.Context, network, addr string) (net.Conn, error)
	logger log.Logger
	// followed is the primary dialled last; quorumWarned: a quorum
	// larger than the sentinels configured was reported, and said.
	followed     atomic.Pointer[string]
	quorumWarned atomic.Bool
}

func newSentinels(o *redis.UniversalOptions, logger log.Logger) *sentinels {
	s := &sentinels{addrs: o.Addrs, name: o.MasterName, role: *o.Simple(), logger: logger}
	s.dialer = redis.NewDialer(&s.role) // go-redis's own, TLS included
	for _, a := range o.Addrs {
		s.voters = append(s.voters, redis.NewClient(&redis.Options{Addr: a, Username: o.SentinelUsername, Password: o.SentinelPassword,
			TLSConfig: o.TLSConfig, Protocol: 2, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
			ContextTimeoutEnabled: true, MaxRetries: -1, DisableIdentity: true, MaintNotificationsConfig: o.MaintNotificationsConfig}))
	}
	return s
}

func (s *sentinels) close() {
	for _, v := range s.voters {
		_ = v.Close()
	}
}

// dial connects to addr when it is a configured sentinel, else to the
// primary: go-redis's pick, addr, is one sentinel's word.
func (s *sentinels) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if !slices.Contains(s.addrs, addr) {
		var err error
		if addr, err = s.primary(ctx); err != nil {
			return nil, fmt.Errorf("sentinel master %s: %w", s.name, err)
		}
	}
	return s.dialer(ctx, network, addr)
}

// primary is the address a majority of the sentinels name as the
// primary, once it answers ROLE master.
func (s *sentinels) primary(ctx context.Context) (string, error) {
	type vote struct {
		addr   string
		quorum int
		err    error
	}
	// Every sentinel is asked at once; each answers or gives up at the
	// dial's deadline, into a buffer, so that a majority need not wait for
	// a sentinel that hangs.
	votes := make(chan vote, len(s.voters))
	for _, v := range s.voters {
		go func() {
			kv, err := v.Do(ctx, "SENTINEL", "MASTER", s.name).StringSlice()
			m := map[string]string{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i]] = kv[i+1]
			}
			q, _ := strconv.Atoi(m["quorum"])
			votes <- vote{net.JoinHostPort(m["ip"], m["port"]), q, err}
		}()
	}
	count, quorum := map[string]int{}, 0
	primary, need := "", len(s.voters)/2+1
	for range s.voters {
		v := <-votes
		if v.err != nil {
			continue
		}
		quorum = max(quorum, v.quorum)
		if count[v.addr]++; count[v.addr] == need {
			primary = v.addr
			break
		}
	}
	if quorum > len(s.addrs) && s.quorumWarned.CompareAndSwap(false, true) {
		level.Warn(s.logger).Log("msg", fmt.Sprintf("cluster.sentinel.addresses (--cluster.redis-sentinel-address) names %d Redis Sentinel(s), "+
			"fewer than the quorum of %d they report: a majority of them is no quorum; give every sentinel", len(s.addrs), quorum))
	}
	if primary == "" {
		return "", fmt.Errorf("no %d of the %d sentinels name the same primary (%v): not followed", need, len(s.voters), count)
	}
	o := s.role
	o.Addr = primary
	c := redis.NewClient(&o)
	defer c.Close()
	role, err := c.Do(ctx, "ROLE").Slice()
	if err == nil && (len(role) == 0 || role[0] != "master") {
		err = fmt.Errorf("ROLE answers %.20v", role)
	}
	if err != nil {
		return "", fmt.Errorf("%d of %d sentinels name %s as the primary, and it does not say it is one: not followed: %w", count[primary], len(s.voters), primary, err)
	}
	if prev := s.followed.Swap(&primary); prev == nil || *prev != primary {
		lvl, was := level.Info, "" // the first primary, at start
		if prev != nil {
			lvl, was = level.Warn, *prev
		}
		lvl(s.logger).Log("msg", "the shared Redis's primary is now the one a majority of the sentinels name", "master", s.name,
			"primary", primary, "previous", was, "sentinels_agreeing", count[primary], "sentinels", len(s.voters))
	}
	return primary, nil
}
