package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
)

// Instances sharing a PostgreSQL database must read the session cookies
// the others sign, or users are signed out whenever the load balancer sends
// them to another instance. An instance starting compares checks of its
// session keys (auth.SessionKeyChecks, never the keys) with the live
// instances' and refuses to start, recording nothing, when they are
// incompatible; otherwise it records its own for the next to start.

// sessionKeysStartWindow is how long an instance that recorded its
// session keys counts as live before its first heartbeat (while it syncs
// its workspace and starts its engine): one starting at the same time is
// compared with it.
const sessionKeysStartWindow = 2 * time.Minute

// sessionKeysDiffer is a refusal to start: this instance's session keys and
// those of a live instance cannot read each other's cookies.
type sessionKeysDiffer struct {
	instance string    // the other instance's worker id
	since    time.Time // when it recorded its keys
	// weRead: this instance reads the cookies it signs; theyRead: it reads
	// the cookies this one would sign.
	weRead, theyRead bool
}

func (e *sessionKeysDiffer) Error() string {
	var what string
	switch {
	case !e.weRead && !e.theyRead:
		what = "neither has the key the other signs sessions with"
	case !e.weRead:
		what = "this instance does not have the key it signs sessions with"
	default:
		what = "it does not have the key this instance would sign sessions with (the first)"
	}
	return fmt.Sprintf("not started: TESSERA_SESSION_KEYS differ from those of instance %s, live on this database since %s: %s, so users would be signed out whenever the load balancer sends them from one to the other. "+
		"Give every instance the same TESSERA_SESSION_KEYS; to rotate, first add the new key after the current one on every instance, then move it first",
		e.instance, timeCell(e.since), what)
}

// recordSessionKeys compares keys (the first signs) with the session keys
// of the instances live on store and records them under owner, this
// instance's worker id (recorded: whether it did; nothing on SQLite, whose
// one instance has its own key file). Keys that the live instances cannot
// read, or that cannot read theirs, are a usage error naming the first
// such instance, and nothing is recorded. ttl is the workers' lease TTL.
func recordSessionKeys(ctx context.Context, store *db.Store, owner string, keys []string, ttl time.Duration, now time.Time) (recorded bool, _ error) {
	if store.Dialect() != db.Postgres {
		return false, nil
	}
	if ttl <= 0 {
		ttl = 5 * time.Second
	}
	mine := auth.CheckSessionKeys(keys)
	rec := db.InstanceSessionKeys{Owner: owner, Signing: mine.Signing, Keys: strings.Join(mine.Keys, ","), Since: db.Millis(now)}
	err := store.RecordSessionKeys(ctx, rec, db.Millis(now.Add(-ttl)), db.Millis(now.Add(-sessionKeysStartWindow)), func(live []db.InstanceSessionKeys) error {
		for _, o := range live {
			theirs := auth.SessionKeyChecks{Signing: o.Signing, Keys: strings.Split(o.Keys, ",")}
			if !mine.CompatibleWith(theirs) {
				return &sessionKeysDiffer{instance: o.Owner, since: db.FromMillis(o.Since), weRead: mine.Reads(theirs), theyRead: theirs.Reads(mine)}
			}
		}
		return nil
	})
	var sd *sessionKeysDiffer
	if errors.As(err, &sd) {
		return false, &exitError{ExitUsage, sd}
	}
	if err != nil {
		return false, &exitError{ExitServer, fmt.Errorf("compare the session keys with the other instances': %w", err)}
	}
	return true, nil
}

// forgetSessionKeys deletes the record of this instance's session keys as
// it stops (ctx may be over: the deletion has a few seconds of its own);
// one left behind by a crash stops counting with its heartbeat.
func forgetSessionKeys(store *db.Store, owner string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return store.ForgetSessionKeys(ctx, owner)
}
