package leader

import (
	"strconv"
	"testing"
	"time"
)

// A nonce is accepted once within twice the signature window, and the
// cache drops what is older, so a busy holder's memory stays bounded by
// the requests of that window.
func TestNonceCache(t *testing.T) {
	t.Parallel()
	var c nonceCache
	t0 := time.Unix(1_800_000_000, 0)
	if !c.add("n1", t0) || c.add("n1", t0.Add(time.Second)) {
		t.Fatal("a nonce must be accepted once")
	}
	for i := range 2000 {
		c.add(strconv.Itoa(i), t0)
	}
	later := t0.Add(2*signatureWindow + time.Second)
	if !c.add("n1", later) {
		t.Error("a nonce older than the window was refused")
	}
	if n := len(c.seen); n > 2 {
		t.Errorf("%d nonces kept after the window, want the expired ones dropped", n)
	}
}
