package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// LoginPolicy is how many failed sign-ins the store lets through: at most
// Failures per Window from one address (to any account), and as many to one
// account (from anywhere) before the account is closed to every address that
// did not sign in to it within TrustFor.
type LoginPolicy struct {
	Failures int
	Window   time.Duration
	TrustFor time.Duration
}

// Login lock scopes.
const (
	LoginScopeAddress = "address"
	LoginScopeAccount = "account"
)

// LoginBlockedError is a sign-in refused before its password was checked:
// its address, or its account (from an address it was not used from), had
// Failures failed sign-ins within the window. Until is when the oldest of
// them ages out.
type LoginBlockedError struct {
	Scope string
	Until time.Time
}

func (e *LoginBlockedError) Error() string {
	return fmt.Sprintf("sign-in blocked by the %s's failed sign-ins until %s", e.Scope, e.Until.Format(time.RFC3339))
}

// LoginAccountKey is the stored form of an account name (names are
// case-insensitive).
func LoginAccountKey(name string) string { return strings.ToLower(strings.TrimSpace(name)) }

// ReserveLogin counts a sign-in of account from addr as failed before its
// password is checked, in one write transaction, unless the address or the
// account is blocked (a *LoginBlockedError). N concurrent sign-ins thus
// count N: only Failures of them can be in flight or failed per window.
// The caller settles the reservation with LoginFailed, LoginSucceeded or
// ReleaseLogin. trusted reports whether the account signed in from addr
// within TrustFor.
func (s *Store) ReserveLogin(ctx context.Context, account, addr string, p LoginPolicy, now time.Time) (id int64, trusted bool, err error) {
	account = LoginAccountKey(account)
	err = s.Tx(ctx, func(tx *sqlx.Tx) error {
		since := Millis(now.Add(-p.Window))
		if _, err := tx.ExecContext(ctx, `DELETE FROM login_failures WHERE at <= ?`, since); err != nil {
			return err
		}
		var err error
		trusted, err = loginTrusted(ctx, tx, account, addr, p, now)
		if err != nil {
			return err
		}
		// An address the account signed in from answers only for its own
		// failures on that account: others' typos at a shared address, or
		// a lock on the account from elsewhere, do not shut its owner out.
		checks := []struct{ scope, where string }{{LoginScopeAddress, "addr = ?"}, {LoginScopeAccount, "account = ?"}}
		args := [][]any{{addr}, {account}}
		if trusted {
			checks, args = checks[:1], [][]any{{addr, account}}
			checks[0].where = "addr = ? AND account = ?"
		}
		for i, c := range checks {
			until, err := loginBlockedUntil(ctx, tx, c.where, args[i], p, now)
			if err != nil {
				return err
			}
			if !until.IsZero() {
				return &LoginBlockedError{Scope: c.scope, Until: until}
			}
		}
		id, err = insertID(ctx, tx, `INSERT INTO login_failures (account, addr, at, pending) VALUES (?,?,?,1)`, account, addr, Millis(now))
		return err
	})
	return id, trusted, err
}

// loginBlockedUntil is when the Failures-th newest failure matching where
// (one of ReserveLogin's fixed conditions, never user input) within the
// window ages out, or zero when there are fewer.
func loginBlockedUntil(ctx context.Context, tx *sqlx.Tx, where string, args []any, p LoginPolicy, now time.Time) (time.Time, error) {
	var at int64
	err := tx.GetContext(ctx, &at, `SELECT at FROM login_failures WHERE `+where+` AND at > ? ORDER BY at DESC LIMIT 1 OFFSET ?`,
		append(args, Millis(now.Add(-p.Window)), p.Failures-1)...)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	return FromMillis(at).Add(p.Window), nil
}

func loginTrusted(ctx context.Context, tx *sqlx.Tx, account, addr string, p LoginPolicy, now time.Time) (bool, error) {
	if p.TrustFor <= 0 {
		return false, nil
	}
	var n int
	err := tx.GetContext(ctx, &n, `SELECT COUNT(*) FROM login_trust WHERE account = ? AND addr = ? AND at > ?`, account, addr, Millis(now.Add(-p.TrustFor)))
	return n > 0, err
}

// LoginLockout is a lock that a failed sign-in just set: its scope, and the
// account or address it closes.
type LoginLockout struct {
	Scope string
	Key   string
}

// LoginFailed settles a reservation as a failure and reports the locks it
// set (the account's or the address's Failures-th failure within the
// window), each recorded as a login.locked_out event.
func (s *Store) LoginFailed(ctx context.Context, id int64, account, addr string, p LoginPolicy, now time.Time) ([]LoginLockout, error) {
	account = LoginAccountKey(account)
	var locked []LoginLockout
	err := s.Tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE login_failures SET pending = 0 WHERE id = ?`, id); err != nil {
			return err
		}
		since := Millis(now.Add(-p.Window))
		keys := []LoginLockout{{LoginScopeAddress, addr}, {LoginScopeAccount, account}}
		if account == "" { // a name no account can have: counted for its address only
			keys = keys[:1]
		}
		for _, k := range keys {
			column := "addr"
			if k.Scope == LoginScopeAccount {
				column = "account"
			}
			var n int
			if err := tx.GetContext(ctx, &n, `SELECT COUNT(*) FROM login_failures WHERE `+column+` = ? AND at > ? AND pending = 0`, k.Key, since); err != nil {
				return err
			}
			if n != p.Failures {
				continue
			}
			locked = append(locked, k)
			subject := "address:" + addr
			if k.Scope == LoginScopeAccount {
				subject = "login:" + account
				var name string
				if err := tx.GetContext(ctx, &name, `SELECT name FROM users WHERE name = ? COLLATE NOCASE`, account); err == nil {
					subject = userSubject(name)
				} else if !errors.Is(err, sql.ErrNoRows) {
					return err
				}
			}
			if _, err := AppendEvent(ctx, tx, "login.locked_out", subject, "", map[string]any{
				"scope": k.Scope, "account": account, "addr": addr, "failures": p.Failures, "window_ms": p.Window.Milliseconds(),
			}, "", now); err != nil {
				return err
			}
		}
		return nil
	})
	return locked, err
}

// LoginSucceeded settles a reservation of a good sign-in: it and the
// account's other failures from this address are forgotten (its owner's
// typos), and the address is trusted by the account from now on. Failures
// from other addresses stay: the account stays closed to them.
func (s *Store) LoginSucceeded(ctx context.Context, id int64, account, addr string, now time.Time) error {
	account = LoginAccountKey(account)
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM login_failures WHERE id = ? OR (account = ? AND addr = ?)`, id, account, addr); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO login_trust (account, addr, at) VALUES (?,?,?)
			ON CONFLICT (account, addr) DO UPDATE SET at = excluded.at`, account, addr, Millis(now))
		return err
	})
}

// ReleaseLogin drops a reservation whose password was never checked (the
// server was too busy to check it): it does not count.
func (s *Store) ReleaseLogin(ctx context.Context, id int64) error {
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM login_failures WHERE id = ?`, id)
		return err
	})
}

// LoginLock is an account closed by failed sign-ins.
type LoginLock struct {
	Account   string
	Failures  int
	Addresses int
	Until     time.Time
}

// LoginLocks lists the accounts that had at least Failures failed sign-ins
// within the window, by account key: one read of the window's failures
// (pruned to it on every sign-in, so few rows).
func (s *Store) LoginLocks(ctx context.Context, p LoginPolicy, now time.Time) (map[string]LoginLock, error) {
	var rows []struct {
		Account string `db:"account"`
		Addr    string `db:"addr"`
		At      int64  `db:"at"`
	}
	if err := s.r.SelectContext(ctx, &rows, `SELECT account, addr, at FROM login_failures WHERE at > ? AND account != '' ORDER BY account, at DESC`,
		Millis(now.Add(-p.Window))); err != nil {
		return nil, err
	}
	out := map[string]LoginLock{}
	addrs := map[string]map[string]bool{}
	for _, r := range rows {
		l := out[r.Account]
		l.Account = r.Account
		l.Failures++
		if l.Failures == p.Failures { // newest first: the Failures-th newest ages out last
			l.Until = FromMillis(r.At).Add(p.Window)
		}
		if addrs[r.Account] == nil {
			addrs[r.Account] = map[string]bool{}
		}
		addrs[r.Account][r.Addr] = true
		l.Addresses = len(addrs[r.Account])
		out[r.Account] = l
	}
	for k, l := range out {
		if l.Failures < p.Failures {
			delete(out, k)
		}
	}
	return out, nil
}

// UnlockUser forgets every failed sign-in of the user's account (from any
// address), recording a user.unlocked event with how many it forgot; a
// user that is not locked is unlocked all the same (cleared 0).
func (s *Store) UnlockUser(ctx context.Context, id int64, actor string, now time.Time) (cleared int64, err error) {
	err = s.Tx(ctx, func(tx *sqlx.Tx) error {
		name, err := userName(ctx, tx, id)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM login_failures WHERE account = ?`, LoginAccountKey(name))
		if err != nil {
			return err
		}
		if cleared, err = res.RowsAffected(); err != nil {
			return err
		}
		_, err = AppendEvent(ctx, tx, "user.unlocked", userSubject(name), actor, map[string]any{"failures_cleared": cleared}, "", now)
		return err
	})
	return cleared, err
}
