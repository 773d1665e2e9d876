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
		return validIf(t, err, func(t db.Token) bool { return t.RevokedAt == nil && !t.Disabled && tokenExpired(t, now) == nil })
	case p.Via == "session":
		s, err := a.Store.SessionByID(ctx, p.SessionID)
		return validIf(s, err, func(s db.Session) bool { return !s.Disabled && !a.sessionEnded(s, now) })
	}
	return true, nil
}

// validIf answers StillValid for a credential read with err: one that is
// gone is not valid, one that could not be read is kept (with the error),
// else valid says.
func validIf[T any](v T, err error, valid func(T) bool) (bool, error) {
	if errors.Is(err, db.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	return valid(v), nil
}
