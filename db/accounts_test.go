package db_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// TestAccountsOnBothBackends: users (names unique and found regardless of
// case, ids assigned by the store, idempotent creates), sessions and API
// tokens behave the same on SQLite and PostgreSQL; a refused write (a
// duplicate name, a reused idempotency key) leaves the store writable.
func TestAccountsOnBothBackends(t *testing.T) {
	t.Parallel()
	teststore.Each(t, func(t *testing.T, store *db.Store) {
		ctx := t.Context()
		now := time.UnixMilli(1_750_000_000_123)
		if created, err := store.CreateFirstAdmin(ctx, "Root", "h0", now); err != nil || !created {
			t.Fatalf("first admin: %v %v", created, err)
		}
		if created, err := store.CreateFirstAdmin(ctx, "Other", "h0", now); err != nil || created {
			t.Fatalf("a second first admin: %v %v", created, err)
		}
		ann, err := store.CreateUser(ctx, "Ann", "operator", "h1", "root", now)
		if err != nil || ann.ID <= 0 {
			t.Fatalf("create Ann: %+v %v", ann, err)
		}
		if _, err := store.CreateUser(ctx, "ANN", "viewer", "h2", "root", now); !errors.Is(err, db.ErrDuplicateUser) {
			t.Fatalf("ANN beside Ann: %v, want ErrDuplicateUser", err)
		}
		bob, err := store.CreateUserKeyed(ctx, "bob", "viewer", "h3", "root", "k-bob", now)
		if err != nil || bob.ID <= ann.ID {
			t.Fatalf("create bob: %+v %v (Ann is %d)", bob, err, ann.ID)
		}
		if _, err := store.CreateUserKeyed(ctx, "bobby", "viewer", "h3", "root", "k-bob", now); !errors.Is(err, db.ErrDuplicateEvent) {
			t.Fatalf("reused idempotency key: %v, want ErrDuplicateEvent", err)
		}
		if n, err := store.CountUsers(ctx); err != nil || n != 3 {
			t.Fatalf("users: %d %v, want 3 (a refused create wrote nothing)", n, err)
		}
		got, err := store.UserByName(ctx, "aNN")
		if err != nil || got.ID != ann.ID || got.Name != "Ann" || got.Role != "operator" || got.CreatedAt != db.Millis(now) {
			t.Fatalf("UserByName(aNN): %+v %v", got, err)
		}
		if _, err := store.UserByName(ctx, "nobody"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("missing user: %v", err)
		}
		later := now.Add(time.Minute)
		if err := store.SetUserRole(ctx, ann.ID, "admin", "root", later); err != nil {
			t.Fatal(err)
		}
		if err := store.SetUserDisabled(ctx, bob.ID, true, "root", later); err != nil {
			t.Fatal(err)
		}
		users, err := store.ListUsers(ctx)
		if err != nil || len(users) != 3 {
			t.Fatalf("list: %+v %v", users, err)
		}
		if users[0].Name != "Ann" || users[1].Name != "bob" || users[2].Name != "Root" {
			t.Fatalf("users not by name regardless of case: %s %s %s", users[0].Name, users[1].Name, users[2].Name)
		}
		if users[0].Role != "admin" || users[0].UpdatedAt != db.Millis(later) || !users[1].Disabled || users[2].Disabled {
			t.Fatalf("updates not stored: %+v", users)
		}

		// Sessions.
		ann, _ = store.UserByID(ctx, ann.ID)
		for _, id := range []string{"s1", "s2", "s3"} {
			if err := store.CreateSession(ctx, id, ann, "192.0.2.7", "test", now); err != nil {
				t.Fatal(err)
			}
		}
		if err := store.TouchSession(ctx, "s1", later); err != nil {
			t.Fatal(err)
		}
		s1, err := store.SessionByID(ctx, "s1")
		if err != nil || s1.UserID != ann.ID || s1.UserName != "Ann" || s1.UserRole != "admin" || s1.Disabled || s1.LastSeenAt != db.Millis(later) {
			t.Fatalf("session s1: %+v %v", s1, err)
		}
		if err := store.DeleteSession(ctx, "s2", true, later); err != nil {
			t.Fatal(err)
		}
		if _, err := store.SessionByID(ctx, "s2"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("deleted session: %v", err)
		}
		if err := store.ChangeOwnPassword(ctx, ann.ID, "h9", "s1", "Ann", later); err != nil {
			t.Fatal(err)
		}
		if _, err := store.SessionByID(ctx, "s3"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("another session outlived a password change: %v", err)
		}
		if _, err := store.SessionByID(ctx, "s1"); err != nil {
			t.Fatalf("the session that changed the password ended: %v", err)
		}

		// API tokens.
		exp := now.Add(90 * 24 * time.Hour)
		tok, err := store.CreateToken(ctx, bob.ID, "ci", "tsr_ab", "hash-1", "", &exp, "root", now)
		if err != nil || tok.ID <= 0 || tok.UserName != "bob" {
			t.Fatalf("create token: %+v %v", tok, err)
		}
		tok2, err := store.CreateToken(ctx, bob.ID, "ro", "tsr_cd", "hash-2", "viewer", nil, "root", now)
		if err != nil || tok2.ID <= tok.ID {
			t.Fatalf("second token: %+v %v", tok2, err)
		}
		if _, err := store.CreateToken(ctx, 9999, "x", "p", "hash-3", "", nil, "root", now); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("token of a missing user: %v", err)
		}
		if err := store.TouchToken(ctx, tok.ID, later); err != nil {
			t.Fatal(err)
		}
		byHash, err := store.TokenByHash(ctx, "hash-1")
		if err != nil || byHash.ID != tok.ID || byHash.Role != nil || byHash.ExpiresAt == nil || *byHash.ExpiresAt != db.Millis(exp) ||
			byHash.LastUsedAt == nil || *byHash.LastUsedAt != db.Millis(later) || !byHash.Disabled {
			t.Fatalf("token by hash: %+v %v", byHash, err)
		}
		if err := store.RevokeToken(ctx, tok.ID, "root", later); err != nil {
			t.Fatal(err)
		}
		list, err := store.ListTokens(ctx, bob.ID)
		if err != nil || len(list) != 2 || list[0].ID != tok2.ID || list[0].Role == nil || *list[0].Role != "viewer" || list[1].RevokedAt == nil {
			t.Fatalf("tokens newest first, the first revoked: %+v %v", list, err)
		}

		// The audit trail of the user.
		evs, err := store.EventsBySubject(ctx, "user:bob", 10)
		if err != nil || len(evs) != 5 || evs[0].Type != "token.revoked" || evs[3].Type != "user.disabled" || evs[4].Type != "user.created" {
			t.Fatalf("bob's events: %+v %v", evs, err)
		}
	})
}

// TestRunIDSecretKeepsTheFirst: the run id secret is stored once; a
// second candidate gets the first.
func TestRunIDSecretKeepsTheFirst(t *testing.T) {
	t.Parallel()
	teststore.Each(t, func(t *testing.T, store *db.Store) {
		ctx := t.Context()
		if _, ok, err := store.RunIDSecret(ctx); ok || err != nil {
			t.Fatalf("fresh store has a secret: %v %v", ok, err)
		}
		for _, c := range []string{"aa", "bb"} {
			if got, err := store.KeepRunIDSecret(ctx, c); got != "aa" || err != nil {
				t.Fatalf("keep %s: %q %v", c, got, err)
			}
		}
		if got, ok, err := store.RunIDSecret(ctx); got != "aa" || !ok || err != nil {
			t.Fatalf("secret: %q %v %v", got, ok, err)
		}
	})
}
