package handlers

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/labstack/echo/v4"
)

// Live-update stream limits (defaults of Handler.MaxStreams and
// Handler.MaxStreamsPerPrincipal).
const (
	DefaultMaxStreams             = 512
	DefaultMaxStreamsPerPrincipal = 16
)

// streamRetryAfter is the Retry-After of a refused stream, in seconds (the
// page's sse extension retries on its own, backing off up to a minute).
const streamRetryAfter = 10

// streamSlots counts the open event streams, in all and per principal.
type streamSlots struct {
	mu    sync.Mutex
	total int
	per   map[string]int
}

// streamHolder names who holds a stream: the session, the API token, or,
// without either, the client's address; and says so in words.
func streamHolder(c echo.Context) (key, words string) {
	p := CurrentPrincipal(c)
	switch {
	case p != nil && p.Via == "session":
		return "session:" + p.SessionID, "this browser session"
	case p != nil && p.Via == "token":
		return "token:" + strconv.FormatInt(p.TokenID, 10), "this API token"
	}
	return "address:" + c.RealIP(), "your address"
}

// takeStreamSlot reserves a slot for one event stream of c's principal, or
// returns the refusal: 429 when the principal holds its most, 503 when the
// server does. release gives the slot back (call it exactly once).
func (h *Handler) takeStreamSlot(c echo.Context) (release func(), err error) {
	total, per := h.MaxStreams, h.MaxStreamsPerPrincipal
	if total <= 0 {
		total = DefaultMaxStreams
	}
	if per <= 0 {
		per = DefaultMaxStreamsPerPrincipal
	}
	key, words := streamHolder(c)
	s := &h.streams
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.per == nil {
		s.per = map[string]int{}
	}
	c.Response().Header().Set("Retry-After", strconv.Itoa(streamRetryAfter))
	if s.per[key] >= per {
		return nil, &UserError{Status: http.StatusTooManyRequests, Code: "too_many_streams",
			Message: fmt.Sprintf("too many live pages: %s already holds %d live update streams, the most it may; close other tabs with live pages (asset pages, the backfills list, running backfills), or reload this page to see changes", words, per)}
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
