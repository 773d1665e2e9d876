package handlers

import (
	"context"
	"errors"
	"time"

	"github.com/tessera-dev/tessera/db"
)

// DefaultStreamCredentialCheck is how often an open event stream checks
// that the credential it was opened with still holds (the default of
// Handler.StreamCredentialCheck): one indexed read per stream per period.
const DefaultStreamCredentialCheck = 15 * time.Second

// streamCredentialCheck is the period of Handler.StreamCredentialCheck.
func (h *Handler) streamCredentialCheck() time.Duration {
	if h.StreamCredentialCheck > 0 {
		return h.StreamCredentialCheck
	}
	return DefaultStreamCredentialCheck
}

// StillValid reports whether the credential p was identified by still
// holds at now: its token not revoked, expired or of a disabled user; its
// session not ended, timed out or of a disabled user. Anonymous principals
// always hold. A failed read is an error (the caller keeps what it has: a
// busy database must not end every stream).
func (a *Auth) StillValid(ctx context.Context, p *Principal, now time.Time) (bool, error) {
	switch {
	case p.Anonymous():
		return true, nil
	case p.Via == "token":
		t, err := a.Store.TokenByID(ctx, p.TokenID)
		if errors.Is(err, db.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return true, err
		}
		return t.RevokedAt == nil && !t.Disabled && tokenExpired(t, now) == nil, nil
	case p.Via == "session":
		s, err := a.Store.SessionByID(ctx, p.SessionID)
		if errors.Is(err, db.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return true, err
		}
		return !s.Disabled && !a.sessionEnded(s, now), nil
	}
	return true, nil
}
