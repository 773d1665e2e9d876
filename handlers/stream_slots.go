package handlers

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/labstack/echo/v4"
)

// Live-update stream limits (defaults of Handler.MaxStreams and
// Handler.MaxStreamsPerUser).
const (
	DefaultMaxStreams        = 512
	DefaultMaxStreamsPerUser = 16
)

// streamRetryAfter is the Retry-After of a refused stream, in seconds (the
// page's sse extension retries on its own, backing off up to a minute).
const streamRetryAfter = 10

// streamSlots counts the open event streams, in all and per user (or
// address).
type streamSlots struct {
	mu    sync.Mutex
	total int
	per   map[string]int
}

// streamHolder names who holds a stream, and says so in words: a signed-in
// user, whose browser sessions and API tokens share one count (otherwise
// more tokens or another sign-in would be more streams), or, for anonymous
// viewers, the client's address.
func streamHolder(c echo.Context) (key, words, whose string) {
	if p := CurrentPrincipal(c); !p.Anonymous() {
		return "user:" + strconv.FormatInt(p.UserID, 10), "your account", " (all its browser sessions and API tokens together)"
	}
	return "address:" + c.RealIP(), "your address", ""
}

// takeStreamSlot reserves a slot for one event stream of c's user (or
// address), or returns the refusal: 429 when the user holds its most, 503 when the
// server does. release gives the slot back (call it exactly once).
func (h *Handler) takeStreamSlot(c echo.Context) (release func(), err error) {
	total, per := h.MaxStreams, h.MaxStreamsPerUser
	if total <= 0 {
		total = DefaultMaxStreams
	}
	if per <= 0 {
		per = DefaultMaxStreamsPerUser
	}
	key, words, whose := streamHolder(c)
	s := &h.streams
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.per == nil {
		s.per = map[string]int{}
	}
	c.Response().Header().Set("Retry-After", strconv.Itoa(streamRetryAfter))
	if s.per[key] >= per {
		return nil, &UserError{Status: http.StatusTooManyRequests, Code: "too_many_streams",
			Message: fmt.Sprintf("too many live pages: %s already holds %d live update streams%s, the most it may; close other tabs with live pages (asset pages, the backfills list, running backfills), or reload this page to see changes", words, per, whose)}
	}
	if s.total >= total {
		return nil, &UserError{Status: http.StatusServiceUnavailable, Code: "busy",
			Message: fmt.Sprintf("the server holds the most live update streams it may (%d); reload this page later to see changes", total)}
	}
	c.Response().Header().Del("Retry-After")
	s.per[key]++
	s.total++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.total--
			if s.per[key]--; s.per[key] <= 0 {
				delete(s.per, key)
			}
		})
	}, nil
}
