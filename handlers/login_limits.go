package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
)

// LoginRefused is a sign-in refused before its password was checked: its
// address or account had too many failed sign-ins (Code
// "too_many_attempts", Scope db.LoginScopeAddress or db.LoginScopeAccount),
// or every password check slot stayed busy (Code "busy"). RetryAfter is
// when to try again.
type LoginRefused struct {
	Code       string
	Scope      string
	RetryAfter time.Duration
}

func (e *LoginRefused) Error() string { return e.UserError().Message }

// UserError words the refusal for the sign-in page.
func (e *LoginRefused) UserError() *UserError {
	wait := max(time.Second, e.RetryAfter.Round(time.Second)).String()
	switch {
	case e.Code == "busy":
		return &UserError{Status: http.StatusServiceUnavailable, Code: e.Code,
			Message: "the server is checking too many sign-ins at once; try again in a few seconds"}
	case e.Scope == db.LoginScopeAccount:
		return &UserError{Status: http.StatusTooManyRequests, Code: e.Code,
			Message: "too many failed sign-ins for this account from addresses it was not used from; try again in " + wait +
				", sign in from an address you signed in from before, or ask an admin to unlock the account"}
	default:
		return &UserError{Status: http.StatusTooManyRequests, Code: e.Code,
			Message: "too many failed sign-ins from your address; try again in " + wait}
	}
}

// RetryAfterHeader is the Retry-After value (whole seconds, at least 1).
func (e *LoginRefused) RetryAfterHeader() string {
	return strconv.Itoa(int(max(time.Second, e.RetryAfter+time.Second-1).Seconds()))
}

// loginPolicy is the store's form of the sign-in limit.
func (a *Auth) loginPolicy() db.LoginPolicy {
	return db.LoginPolicy{Failures: a.Cfg.LoginLimit.Failures, Window: a.Cfg.LoginLimit.Window, TrustFor: max(0, a.Cfg.LoginTrust)}
}

// HashSlots is how many password checks may run at once.
func (a *Auth) HashSlots() int { return a.slots.Size() }

// PasswordCheckSlots are the slots password checks take (tests hold them
// to see what a busy server answers).
func (a *Auth) PasswordCheckSlots() *auth.HashSlots { return a.slots }

// CheckLogin verifies a name and password under the sign-in limit and the
// bound on password checks; it returns the user, a *LoginRefused, or a
// *UserError (401 bad credentials).
//
// The attempt is counted before the password is checked (db.ReserveLogin),
// so that sign-ins sent at once cannot pass the limit together; an attempt
// that finds no free password check slot within HashWait is not counted.
// Unknown names cost a password check as known ones do. A sign-in from an
// address its account signed in from before may take the slot kept for
// priority.
func (a *Auth) CheckLogin(ctx context.Context, name, password, ip string) (db.User, error) {
	now := a.now()
	limited := a.Cfg.LoginLimit.Failures > 0
	policy := a.loginPolicy()
	// A name longer than any account's is counted for its address only and
	// never stored: it names nothing to lock, and a megabyte of it would
	// cost the database and the log a megabyte.
	account := name
	if len(name) > auth.MaxUserNameLength {
		account = ""
	}
	addr := auth.AddressKey(ip)
	var resv int64
	trusted := false
	if limited {
		id, tr, err := a.Store.ReserveLogin(ctx, account, addr, policy, now)
		var blocked *db.LoginBlockedError
		if errors.As(err, &blocked) {
			return db.User{}, &LoginRefused{Code: "too_many_attempts", Scope: blocked.Scope, RetryAfter: blocked.Until.Sub(now)}
		}
		if err != nil {
			return db.User{}, err
		}
		resv, trusted = id, tr
	}
	// Settle the reservation whatever happens to the request from here on.
	settleCtx := context.WithoutCancel(ctx)
	u, err := db.User{}, error(db.ErrNotFound)
	if account != "" {
		u, err = a.Store.UserByName(ctx, name)
	}
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		if limited {
			_ = a.Store.ReleaseLogin(settleCtx, resv)
		}
		return db.User{}, err
	}
	known := err == nil
	wait, cancel := context.WithTimeout(ctx, a.Cfg.HashWait)
	release, err := a.slots.Acquire(wait, trusted)
	cancel()
	if err != nil {
		if limited {
			if err := a.Store.ReleaseLogin(settleCtx, resv); err != nil {
				return db.User{}, err
			}
		}
		if a.Log != nil {
			a.Log.Warn("sign-in refused: every password check slot stayed busy", "slots", a.slots.Size(), "waited", a.Cfg.HashWait.String(), "ip", ip)
		}
		return db.User{}, &LoginRefused{Code: "busy", RetryAfter: 2 * time.Second}
	}
	ok := false
	if known {
		ok = auth.CheckPassword(u.PasswordHash, password) && !u.Disabled
	} else {
		auth.BurnPasswordCheck(password)
	}
	release()
	if !ok {
		if limited {
			locks, err := a.Store.LoginFailed(settleCtx, resv, account, addr, policy, a.now())
			if err != nil {
				return db.User{}, err
			}
			for _, l := range locks {
				a.logLockout(l)
			}
		}
		if a.Cfg.FailureDelay > 0 {
			time.Sleep(a.Cfg.FailureDelay)
		}
		return db.User{}, &UserError{Status: http.StatusUnauthorized, Code: "bad_credentials", Message: "wrong user name or password, or the account is disabled"}
	}
	if limited {
		if err := a.Store.LoginSucceeded(settleCtx, resv, account, addr, a.now()); err != nil {
			return db.User{}, err
		}
	}
	return u, nil
}

func (a *Auth) logLockout(l db.LoginLockout) {
	if a.Log != nil {
		a.Log.Warn("sign-in locked out after repeated failures", "scope", l.Scope, "key", l.Key, "limit", a.Cfg.LoginLimit.String(),
			"rule", fmt.Sprintf("the %s is refused until its oldest failure is %s old", l.Scope, a.Cfg.LoginLimit.Window))
	}
}

// LoginLocks are the accounts closed by failed sign-ins now, by
// db.LoginAccountKey (none when the limit is off).
func (a *Auth) LoginLocks(ctx context.Context) (map[string]db.LoginLock, error) {
	if a.Cfg.LoginLimit.Failures <= 0 {
		return nil, nil
	}
	return a.Store.LoginLocks(ctx, a.loginPolicy(), a.now())
}

// lockText says why an account is locked, for the Users page ("" when it
// is not).
func lockText(l db.LoginLock, now time.Time) string {
	if l.Failures == 0 {
		return ""
	}
	addrs := "1 address"
	if l.Addresses != 1 {
		addrs = fmt.Sprintf("%d addresses", l.Addresses)
	}
	return fmt.Sprintf("%d failed sign-ins from %s; open again in %s, or at once to addresses that signed in to it before",
		l.Failures, addrs, max(time.Second, l.Until.Sub(now).Round(time.Second)))
}
