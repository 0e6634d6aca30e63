package leader

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
)

// Forwarding between replicas. The lease in Redis names the replica that
// runs the gateway, but whoever can write to Redis can rewrite it: the
// replicas therefore trust each other only through a secret they share
// outside Redis (--cluster.forward-secret-file).
//
//   - A forwarding replica checks the client's credentials itself (its web
//     front did) and forwards without them: no Authorization, no cookie.
//     It signs each request instead: an HMAC over a timestamp, a random
//     nonce, the method, the URI, the client's address and user, and the
//     holder's lease owner (owner@advertise URL), so a signature made for
//     one holder is worth nothing at another.
//   - Before the first request to a holder (each lease value: a rewritten
//     lease is a new one), it sends a signed probe and forwards only when
//     the answer carries the proof: an HMAC over the probe's nonce and the
//     holder's own owner string. A listener that a rewritten lease points
//     at cannot compute it, and a real holder asked to prove it for a lease
//     naming another address proves its own owner instead, which does not
//     match. Every answer to a forwarded request carries the proof too.
//   - The holder accepts a signed request only within 30 s of its
//     timestamp and only once (it remembers the nonces of twice that), so
//     a recorded request cannot be played again to it (a holder restarted
//     within those 30 s has forgotten its nonces: recording a request
//     needs a place on the network path, which TLS between the replicas
//     closes). The body is not signed, for the same reason.

const (
	// clientHeader and userHeader carry, signed, the client's address and
	// basic-auth user as the forwarding replica saw them.
	clientHeader = "X-Mintlify-Exporter-Client"
	userHeader   = "X-Mintlify-Exporter-User"
	// proofHeader is the holder's answer: it knows the secret.
	proofHeader = "X-Mintlify-Exporter-Proof"
	// probePath is what a forwarding replica asks first.
	probePath = "/api/-/replica-probe"
	// signatureWindow is how far a signed request's timestamp may be from
	// the holder's clock (replicas' clocks are synchronised, by NTP).
	signatureWindow = 30 * time.Second
	// MinSecretBytes is the shortest forward secret accepted.
	MinSecretBytes = 16
)

// ErrUnauthenticatedReplica is what a forwarded request with a missing or
// wrong signature is refused with.
var ErrUnauthenticatedReplica = errors.New("forwarded request without a valid replica signature (is --cluster.forward-secret-file the same on every replica?)")

// mac is the HMAC-SHA256 of the fields under the secret, each field
// length-prefixed so that no two lists of fields sign alike.
func mac(secret []byte, fields ...string) []byte {
	h := hmac.New(sha256.New, secret)
	var n [8]byte
	for _, f := range fields {
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return h.Sum(nil)
}

// signed is a forwarded request's signature, as parsed by the holder.
// Its nonce is a rand.Text: 26 characters.
type signed struct {
	ts, nonce, sum string
}

func parseSigned(v string) (signed, bool) {
	f := strings.Fields(v)
	if len(f) != 4 || f[0] != "v1" || len(f[2]) != 26 || len(f[3]) != 64 {
		return signed{}, false
	}
	return signed{ts: f[1], nonce: f[2], sum: f[3]}, true
}

func requestMAC(secret []byte, s signed, method, uri, client, user, holder string) []byte {
	return mac(secret, "mintlify_exporter forward v1", s.ts, s.nonce, method, uri, client, user, holder)
}

func proofMAC(secret []byte, nonce, holder string) []byte {
	return mac(secret, "mintlify_exporter proof v1", nonce, holder)
}

// sign sets the signature headers of out, a request to holder for the
// client (address, user) of the original request; it returns the nonce,
// whose proof the answer must carry.
func (l *Leader) sign(out *http.Request, uri, client, user, holder string) string {
	s := signed{ts: strconv.FormatInt(time.Now().UnixMilli(), 10), nonce: rand.Text()}
	sum := requestMAC(l.opts.ForwardSecret, s, out.Method, uri, client, user, holder)
	out.Header.Set(forwardedHeader, "v1 "+s.ts+" "+s.nonce+" "+hex.EncodeToString(sum))
	out.Header.Set(clientHeader, client)
	out.Header.Set(userHeader, user)
	return s.nonce
}

// checkProof reports whether resp proves that its replica knows the secret
// and is holder.
func (l *Leader) checkProof(resp *http.Response, nonce, holder string) bool {
	got, err := hex.DecodeString(resp.Header.Get(proofHeader))
	return err == nil && hmac.Equal(got, proofMAC(l.opts.ForwardSecret, nonce, holder))
}

type forwardedKey struct{}

// forwarded marks a request whose signature was accepted: its nonce, which
// the answer's proof signs.
type forwarded struct {
	nonce string
}

// Authenticate checks a request that claims to come from another replica
// (it carries the forwarded header): it answers r with the client's
// address and user in its context (gateway.ClientOf reads them) when the
// signature is valid, fresh, not seen before and made for this replica;
// else ErrUnauthenticatedReplica. A request without the header is nil,
// nil: the web front checks it as any client's.
func (l *Leader) Authenticate(r *http.Request) (*http.Request, error) {
	v := r.Header.Get(forwardedHeader)
	if v == "" {
		return nil, nil
	}
	s, ok := parseSigned(v)
	if !ok {
		return nil, ErrUnauthenticatedReplica
	}
	ms, err := strconv.ParseInt(s.ts, 10, 64)
	if err != nil {
		return nil, ErrUnauthenticatedReplica
	}
	now := time.Now()
	if d := now.Sub(time.UnixMilli(ms)); d > signatureWindow || d < -signatureWindow {
		return nil, fmt.Errorf("%w: its timestamp is %s away from this replica's clock", ErrUnauthenticatedReplica, d.Round(time.Second))
	}
	got, err := hex.DecodeString(s.sum)
	client, user := r.Header.Get(clientHeader), r.Header.Get(userHeader)
	if err != nil || !hmac.Equal(got, requestMAC(l.opts.ForwardSecret, s, r.Method, r.URL.RequestURI(), client, user, l.owner)) {
		return nil, ErrUnauthenticatedReplica
	}
	if !l.nonces.add(s.nonce, now) {
		return nil, fmt.Errorf("%w: replayed", ErrUnauthenticatedReplica)
	}
	r.Header.Del(clientHeader)
	r.Header.Del(userHeader)
	ctx := gateway.WithClient(r.Context(), gateway.Client{Addr: client, User: user})
	return r.WithContext(context.WithValue(ctx, forwardedKey{}, forwarded{nonce: s.nonce})), nil
}

// nonceCache remembers the nonces of the signatures accepted within the
// window: only signed requests add one, so it holds at most a window's
// forwarded requests.
type nonceCache struct {
	mu   sync.Mutex
	seen map[string]time.Time
	// pruned is when the expired nonces were last dropped (at most once a
	// second, so that a busy holder does not walk the map per request).
	pruned time.Time
}

// add records nonce, and reports false when it was seen within the window.
func (c *nonceCache) add(nonce string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]time.Time{}
	}
	if len(c.seen) > 1024 && now.Sub(c.pruned) > time.Second {
		c.pruned = now
		for k, t := range c.seen {
			if now.Sub(t) > 2*signatureWindow {
				delete(c.seen, k)
			}
		}
	}
	if t, ok := c.seen[nonce]; ok && now.Sub(t) <= 2*signatureWindow {
		return false
	}
	c.seen[nonce] = now
	return true
}

// prove sends a signed probe to the holder at base and reports whether it
// proved that it knows the secret. Nothing of any client goes with it.
func (l *Leader) prove(ctx context.Context, base *url.URL, holder string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.JoinPath(probePath).String(), nil)
	if err != nil {
		return err
	}
	nonce := l.sign(req, probePath, "", "", holder)
	resp, err := l.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || !l.checkProof(resp, nonce, holder) {
		return fmt.Errorf("answered HTTP %d without the proof that it knows the forward secret", resp.StatusCode)
	}
	return nil
}
