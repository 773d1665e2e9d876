package testkit

import (
	"net"
	"strconv"
	"testing"
)

// FreeAddr hands out distinct loopback ports below the ephemeral range
// (where listeners on port 0 take theirs), each free when it returns.
func TestFreeAddrBelowTheEphemeralRange(t *testing.T) {
	lo, hi := freePortRange()
	seen := map[string]bool{}
	for range 50 {
		addr := FreeAddr(t)
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		_, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		if hi-lo >= 100 && (port < lo || port >= hi) {
			t.Fatalf("port %d outside [%d, %d)", port, lo, hi)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("%s is not free: %v", addr, err)
		}
		ln.Close()
	}
}
