package testkit

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// FreeAddr is a loopback address (127.0.0.1:port) that nothing listens on
// when it returns, for a server the test starts (the real binary's
// --addr).
//
// The port is below the kernel's ephemeral range, from which every
// listener on port 0 and every outgoing connection takes its port: a port
// FreeAddr took from that range (listening on port 0, then closing) was
// once taken again by another test's server before the binary bound it
// (make test, exit 3, address in use). Below it, only FreeAddr hands
// ports out: from a random start per test process, one after the other,
// each reserved for the process's life (reservePort), since two test
// binaries of one make test run at once and once handed out the same port
// (TestClusterCrashThreeInstances waited 2 minutes for a server that had
// exited: address in use).
func FreeAddr(t testing.TB) string {
	t.Helper()
	lo, hi := freePortRange()
	if hi-lo >= 100 {
		for range 200 {
			port := lo + int(nextFreePort.Add(1))%(hi-lo)
			if !reservePort(port) {
				continue // another test process handed it out
			}
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				continue
			}
			addr := ln.Addr().String()
			ln.Close()
			return addr
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// nextFreePort counts the ports FreeAddr tried, from a random start.
var nextFreePort atomic.Int64

func init() { nextFreePort.Store(rand.Int64N(1 << 20)) }

// freePortRange is the ports FreeAddr hands out: from 20000 (or 10000) up
// to the start of the ephemeral range (Linux's ip_local_port_range, 32768
// by default); an empty range when that starts lower.
func freePortRange() (lo, hi int) {
	hi = 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				hi = n
			}
		}
	}
	lo = 20000
	if hi < 25000 {
		lo = 10000
	}
	return lo, hi
}

// portLocks is the folder of FreeAddr's reservations, fixed at the start
// (tests may change TMPDIR for the servers they start).
var portLocks = filepath.Join(os.TempDir(), "tessera-test-ports")

// held keeps the reserved ports' files open: their locks last as long as
// the process.
var (
	heldMu sync.Mutex
	held   []*os.File
)

// reservePort takes an exclusive lock on a file named for port, kept until
// this process ends (the kernel lets it go then, however it ends): false
// when another process holds it. Ports this process reserved before are
// not handed out again either (the counter does not come back to them
// within its range).
func reservePort(port int) bool {
	if err := os.MkdirAll(portLocks, 0o777); err != nil {
		return true // no reservations: as before
	}
	f, err := os.OpenFile(filepath.Join(portLocks, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false
	}
	heldMu.Lock()
	held = append(held, f)
	heldMu.Unlock()
	return true
}
