package testkit

import (
	"net"
	"testing"
)

// FreeAddr is a loopback address (127.0.0.1:port) that nothing listens on
// when it returns, for a server the test starts (the real binary's
// --addr).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
