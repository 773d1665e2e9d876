package handlers

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// MaxTokenLifetime is the longest expiry a token may be given (ten years):
// anything longer is a typo, and a token that should never expire is made
// without one.
const MaxTokenLifetime = 3650 * 24 * time.Hour

// MinTokenLifetime is the shortest expiry a token may be given: a shorter
// one makes a token that has all but expired when its secret is shown.
const MinTokenLifetime = time.Minute

// ParseTokenLifetime reads a token's lifetime (90d, 12h): at least
// MinTokenLifetime and at most MaxTokenLifetime. The error says what is wrong, without naming the
// field (the caller does: --expires, expires_in).
func ParseTokenLifetime(s string) (time.Duration, error) {
	d, err := catalog.ParseDuration(s)
	if err != nil {
		if strings.HasPrefix(strings.TrimSpace(s), "-") {
			return 0, fmt.Errorf("%q is negative; give how long the token lives, e.g. 90d (leave it out for a token that never expires)", s)
		}
		return 0, fmt.Errorf("%v (a token's lifetime, e.g. 90d; leave it out for a token that never expires)", err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q is no lifetime; give more than 0, e.g. 90d (leave it out for a token that never expires)", s)
	}
	if d < MinTokenLifetime {
		return 0, fmt.Errorf("%q is shorter than 1 minute, the least a token may live; give e.g. 1h or 90d (leave it out for a token that never expires)", s)
	}
	if d > MaxTokenLifetime {
		return 0, fmt.Errorf("%q is longer than the most a token may live, %s (3650d); leave it out for a token that never expires", s, fmtLifetime(MaxTokenLifetime))
	}
	return d, nil
}

// fmtLifetime spells a lifetime in days when it is whole days.
func fmtLifetime(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.String()
}

// tokenExpiry is when a token made at now expires, from the API's
// expires_in (a lifetime) or expires_at (an RFC 3339 time); nil when
// neither is given. A field sent empty is refused: leaving it out is how a
// token that never expires is asked for.
func tokenExpiry(now time.Time, expiresIn, expiresAt *string) (*time.Time, error) {
	example := now.Add(90 * 24 * time.Hour).UTC().Format(time.RFC3339)
	switch {
	case expiresIn != nil && expiresAt != nil:
		return nil, BadRequest("expires_in", "give expires_in (a lifetime, e.g. \"90d\") or expires_at (a time, e.g. %q), not both", example)
	case expiresIn != nil:
		if strings.TrimSpace(*expiresIn) == "" {
			return nil, BadRequest("expires_in", "expires_in is empty; give a lifetime such as \"90d\", or leave the field out for a token that never expires")
		}
		d, err := ParseTokenLifetime(*expiresIn)
		if err != nil {
			return nil, BadRequest("expires_in", "expires_in: %v", err)
		}
		at := now.Add(d)
		return &at, nil
	case expiresAt != nil:
		if strings.TrimSpace(*expiresAt) == "" {
			return nil, BadRequest("expires_at", "expires_at is empty; give a time such as %q, or leave the field out for a token that never expires", example)
		}
		at, err := time.Parse(time.RFC3339, strings.TrimSpace(*expiresAt))
		if err != nil {
			return nil, BadRequest("expires_at", "expires_at %q is not an RFC 3339 time such as %q", *expiresAt, example)
		}
		if !at.After(now) {
			return nil, BadRequest("expires_at", "expires_at %s is not in the future; give a later time, or leave it out for a token that never expires", at.UTC().Format(time.RFC3339))
		}
		if at.Sub(now) < MinTokenLifetime {
			return nil, BadRequest("expires_at", "expires_at %s is less than 1 minute away, the least a token may live; give a later time", at.UTC().Format(time.RFC3339))
		}
		if at.Sub(now) > MaxTokenLifetime {
			return nil, BadRequest("expires_at", "expires_at %s is more than %s away, the most a token may live; leave it out for a token that never expires", at.UTC().Format(time.RFC3339), fmtLifetime(MaxTokenLifetime))
		}
		return &at, nil
	}
	return nil, nil
}

// tokenExpired is the 401 of a token past its expiry (nil when it is not).
func tokenExpired(t db.Token, now time.Time) error {
	if t.ExpiresAt == nil || now.Before(db.FromMillis(*t.ExpiresAt)) {
		return nil
	}
	return &UserError{Status: http.StatusUnauthorized, Code: "unauthorized",
		Message: fmt.Sprintf("token expired: the API token %q (%s…) expired at %s; create a new one on /settings/tokens or with `tessera token create --user %s --name NAME --expires 90d`",
			t.Name, t.Prefix, db.FromMillis(*t.ExpiresAt).UTC().Format(time.RFC3339), t.UserName)}
}

// expiryWithinToken refuses a token expiring later than the token p is
// signed in with (or never, expires nil): a leaked short-lived token must
// not mint one that outlives it. field is the expiry field the request
// gave (expires_in or expires_at; expires_at when it gave none).
func expiryWithinToken(p *Principal, expires *time.Time, field string) error {
	if p == nil || p.Via != "token" || p.TokenExpires == nil {
		return nil
	}
	limit := p.TokenExpires.UTC().Format(time.RFC3339)
	how := "sign in with a password, or use a token without expiry, to create a token that lives longer"
	if expires == nil {
		return BadRequest(field, "the token you are signed in with expires at %s, so the tokens it creates must expire by then: give expires_at (at latest %s) or expires_in; sign in with a password, or use a token without expiry, to create a token that never expires", limit, limit)
	}
	if expires.After(*p.TokenExpires) {
		return BadRequest(field, "%s is after %s, when the token you are signed in with expires at %s; the tokens it creates must expire by then: give an earlier expiry, or %s", field, expires.UTC().Format(time.RFC3339), limit, how)
	}
	return nil
}
