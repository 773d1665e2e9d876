package auth

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Limit is at most Failures failed sign-ins per Window for one key (an
// account or an address). Zero Failures disables limiting.
type Limit struct {
	Failures int
	Window   time.Duration
}

func (l Limit) String() string {
	if l.Failures <= 0 {
		return "off"
	}
	return fmt.Sprintf("%d/%s", l.Failures, l.Window)
}

// ParseLimit reads "5/15m" (failures per window) or "off".
func ParseLimit(s string, parseDur func(string) (time.Duration, error)) (Limit, error) {
	s = strings.TrimSpace(s)
	if s == "off" || s == "0" {
		return Limit{}, nil
	}
	n, w, ok := strings.Cut(s, "/")
	if !ok {
		return Limit{}, fmt.Errorf("login limit %q is not FAILURES/WINDOW (for example 5/15m) or off", s)
	}
	f, err := strconv.Atoi(n)
	if err != nil || f < 1 {
		return Limit{}, fmt.Errorf("login limit %q: failures must be a positive integer", s)
	}
	d, err := parseDur(w)
	if err != nil || d <= 0 {
		return Limit{}, fmt.Errorf("login limit %q: window must be a positive duration such as 15m", s)
	}
	return Limit{Failures: f, Window: d}, nil
}

// AddressKey is the key a client address counts under for the sign-in
// limit: the address itself for IPv4, its /64 network for IPv6 (one
// subscriber holds a whole /64, so counting its addresses one by one would
// give it 2^64 tries).
func AddressKey(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil || !a.Is6() || a.Is4In6() {
		return addr
	}
	p, err := a.Prefix(64)
	if err != nil {
		return addr
	}
	return p.String()
}
