package handlers

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// Times on pages are shown in the reader's display zone (issue 24 item 8):
// the signed-in user's stored zone, else the browser's (the tz cookie that
// static/app.js sets), else UTC. Every time says its zone. The API answers
// in UTC (RFC 3339) and partition keys keep their own zone.

// TZCookie is the cookie static/app.js sets to the browser's zone.
const TZCookie = "tz"

type displayZoneKey struct{}

// zones caches loaded locations by name (valid names only: the set is
// bounded by the time zone database).
var zones sync.Map

// LoadZone loads an IANA zone name for display. It refuses "", "Local"
// (the server's zone, not the reader's) and names the database does not know.
func LoadZone(name string) (*time.Location, bool) {
	if name == "" || name == "Local" || len(name) > 64 || strings.ContainsAny(name, " \\") {
		return nil, false
	}
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location), true
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, false
	}
	zones.Store(name, l)
	return l, true
}

// browserZone is the zone of the request's tz cookie ("" when it has none
// or names no zone).
func browserZone(r *http.Request) string {
	ck, err := r.Cookie(TZCookie)
	if err != nil {
		return ""
	}
	if _, ok := LoadZone(ck.Value); !ok {
		return ""
	}
	return ck.Value
}

// requestZone is the display zone of c: the user's, the browser's, or UTC.
func requestZone(c echo.Context) *time.Location {
	if p := CurrentPrincipal(c); p != nil && p.Timezone != "" {
		if l, ok := LoadZone(p.Timezone); ok {
			return l
		}
	}
	if l, ok := LoadZone(browserZone(c.Request())); ok {
		return l
	}
	return time.UTC
}

// DisplayZone puts the request's display zone on its context (after
// identify: it reads the principal).
func DisplayZone(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		c.SetRequest(r.WithContext(context.WithValue(r.Context(), displayZoneKey{}, requestZone(c))))
		return next(c)
	}
}

// zoneOf is the display zone carried by ctx (UTC without one).
func zoneOf(ctx context.Context) *time.Location {
	if l, ok := ctx.Value(displayZoneKey{}).(*time.Location); ok {
		return l
	}
	return time.UTC
}

// zoneOfC is the display zone of c's request.
func zoneOfC(c echo.Context) *time.Location { return zoneOf(c.Request().Context()) }

// zone is a's display zone (UTC without one).
func (a assetCtx) zone() *time.Location {
	if a.Zone == nil {
		return time.UTC
	}
	return a.Zone
}

// fmtTime writes t for a page in loc, with its zone: "2026-11-28 16:40:05 CET"
// (zones without an abbreviation show their offset, "+0530").
func fmtTime(loc *time.Location, t time.Time) string {
	return t.In(loc).Format("2006-01-02 15:04:05 MST")
}

// fmtMinute is fmtTime to the minute: "2026-11-28 16:40 CET".
func fmtMinute(loc *time.Location, t time.Time) string {
	return t.In(loc).Format("2006-01-02 15:04 MST")
}

// fmtClock is the time of day of t in loc with its zone: "16:40:05 CET".
func fmtClock(loc *time.Location, t time.Time) string {
	return t.In(loc).Format("15:04:05 MST")
}
