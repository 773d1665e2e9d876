package handlers

import (
	"sync"
	"time"
)

// Flash is what a form's POST leaves for the page it redirects to
// (post/redirect/get): shown by the next GET of that page, then gone, so a
// reload neither repeats the action nor shows a token's secret again.
type Flash struct {
	Page      string // the path it is for, e.g. "/settings/tokens"
	Notice    string
	NewSecret string // a new token's secret, shown once
	NewName   string
	expires   time.Time
}

// flashTTL bounds how long an unread flash waits for its GET.
const flashTTL = 5 * time.Minute

// flashes holds one flash per browser session, in memory only: a secret is
// never written to a cookie or the database.
type flashes struct {
	mu sync.Mutex
	m  map[string]Flash // by Principal.SessionID
}

func (f *flashes) put(session string, fl Flash, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]Flash{}
	}
	for k, v := range f.m { // drop the unread ones that expired
		if now.After(v.expires) {
			delete(f.m, k)
		}
	}
	fl.expires = now.Add(flashTTL)
	f.m[session] = fl
}

// take returns the session's flash for page and forgets it.
func (f *flashes) take(session, page string, now time.Time) (Flash, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl, ok := f.m[session]
	if !ok || fl.Page != page {
		return Flash{}, false
	}
	delete(f.m, session)
	if now.After(fl.expires) {
		return Flash{}, false
	}
	return fl, true
}

// SetFlash leaves fl for the session's next GET of fl.Page; it reports false
// when the request has no browser session to attach it to (a bearer token).
func (a *Auth) SetFlash(p *Principal, fl Flash) bool {
	if a == nil || p == nil || p.SessionID == "" {
		return false
	}
	a.flash.put(p.SessionID, fl, a.now())
	return true
}

// TakeFlash returns (and forgets) the session's flash for page.
func (a *Auth) TakeFlash(p *Principal, page string) (Flash, bool) {
	if a == nil || p == nil || p.SessionID == "" {
		return Flash{}, false
	}
	return a.flash.take(p.SessionID, page, a.now())
}
