package testutil

import (
	"net"
	"strconv"
	"testing"
)

// TestFreeAddrIsBelowTheEphemeralRange: the ports FreeAddr hands out are
// not ones the kernel gives the next outgoing connection or ":0" listener,
// and are free to bind.
func TestFreeAddrIsBelowTheEphemeralRange(t *testing.T) {
	lo := ephemeralLow()
	if lo < minPickedPort+1000 {
		t.Skipf("no room below the ephemeral range (first port %d): FreeAddr falls back to :0", lo)
	}
	for range 20 {
		addr := FreeAddr(t)
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(p)
		if port < minPickedPort || port >= lo {
			t.Fatalf("FreeAddr = %s, want a port in [%d, %d)", addr, minPickedPort, lo)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("FreeAddr's %s: %v", addr, err)
		}
		ln.Close()
	}
}
