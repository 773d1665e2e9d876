package auth

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
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

// Limiter counts failed sign-ins per key in a sliding window (in memory:
// a restart forgets them, which is acceptable for a single instance).
type Limiter struct {
	limit Limit
	mu    sync.Mutex
	fails map[string][]time.Time
}

// NewLimiter returns a limiter for l.
func NewLimiter(l Limit) *Limiter { return &Limiter{limit: l, fails: map[string][]time.Time{}} }

func (l *Limiter) prune(key string, now time.Time) []time.Time {
	ts := l.fails[key]
	i := 0
	for i < len(ts) && now.Sub(ts[i]) >= l.limit.Window {
		i++
	}
	ts = ts[i:]
	if len(ts) == 0 {
		delete(l.fails, key)
	} else {
		l.fails[key] = ts
	}
	return ts
}

// Blocked reports whether any key is locked out and for how long.
func (l *Limiter) Blocked(now time.Time, keys ...string) (bool, time.Duration) {
	if l.limit.Failures <= 0 {
		return false, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		ts := l.prune(k, now)
		if len(ts) >= l.limit.Failures {
			return true, l.limit.Window - now.Sub(ts[len(ts)-l.limit.Failures])
		}
	}
	return false, 0
}

// Fail records a failure for every key and returns the keys that just
// reached the limit.
func (l *Limiter) Fail(now time.Time, keys ...string) (lockedNow []string) {
	if l.limit.Failures <= 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		ts := append(l.prune(k, now), now)
		l.fails[k] = ts
		if len(ts) == l.limit.Failures {
			lockedNow = append(lockedNow, k)
		}
	}
	return lockedNow
}

// Succeed forgets an account's failures after a good sign-in.
func (l *Limiter) Succeed(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.fails, key)
}
