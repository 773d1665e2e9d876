package testkit

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
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

// TestFreeAddrReservedAcrossProcesses: a port FreeAddr handed out in this
// process cannot be reserved by another (this test binary again, running
// only the helper below), which can reserve a port nobody holds.
func TestFreeAddrReservedAcrossProcesses(t *testing.T) {
	_, p, _ := net.SplitHostPort(FreeAddr(t))
	mine, _ := strconv.Atoi(p)
	other := mine + 1
	for !reservePortInChild(t, other) { // held by another test process: try the next
		other++
	}
	if reservePortInChild(t, mine) {
		t.Fatalf("another process reserved port %d, which this one holds", mine)
	}
}

// reservePortInChild runs TestReservePortHelper in a child process for
// port and says whether it reserved it.
func reservePortInChild(t *testing.T, port int) bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestReservePortHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TESSERA_RESERVE_PORT="+strconv.Itoa(port))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	switch {
	case strings.Contains(string(out), "reserved"):
		return true
	case strings.Contains(string(out), "refused"):
		return false
	}
	t.Fatalf("child said neither: %s", out)
	return false
}

// TestReservePortHelper is the child of TestFreeAddrReservedAcrossProcesses
// (it does nothing otherwise).
func TestReservePortHelper(t *testing.T) {
	p := os.Getenv("TESSERA_RESERVE_PORT")
	if p == "" {
		return
	}
	port, _ := strconv.Atoi(p)
	if reservePort(port) {
		os.Stdout.WriteString("reserved\n")
	} else {
		os.Stdout.WriteString("refused\n")
	}
}
