package db_test

import (
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// With StaleInput.MaxLag, facts computed less than MaxLag ago answer for a
// newer version when only backfill progress (attempts, runs planned)
// happened since; any other change (a report, a backfill's state, a taint)
// is shown at once, and so is progress once the facts are MaxLag old.
// Without MaxLag the facts are exactly at the version.
func TestStaleFactsMaxLag(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	now := time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)
	store, ws, ids := teststore.WithWorkspace(t, upDownDaily, now)
	exact := staleInputAt(ws, ids, now)
	lagging := exact
	lagging.MaxLag = time.Hour // no test run is this slow: the window never ends by itself
	facts := func(in db.StaleInput, key string) *db.StaleFacts {
		t.Helper()
		f, err := store.StaleFacts(ctx, in, ws.Asset(key))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	event := func(typ, subject string, payload any) {
		t.Helper()
		if err := store.Tx(ctx, func(tx *sqlx.Tx) error {
			_, err := db.AppendEvent(ctx, tx, typ, subject, "test", payload, "", now)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	progress := func() {
		event(db.EvRunsPlanned, "backfill:b1", map[string]any{"runs": []any{}})
		event(db.EvAttemptsFinished, "runs", map[string]any{"attempts": []map[string]any{{"asset_id": ids["up"]}}})
	}
	up, down := facts(lagging, "up"), facts(lagging, "down")

	progress()
	if facts(lagging, "up") != up || facts(lagging, "down") != down {
		t.Fatal("facts recomputed within MaxLag after backfill progress only")
	}
	if facts(exact, "up") == up || facts(exact, "down") == down {
		t.Fatal("facts without MaxLag not recomputed after an attempt of up")
	}

	up, down = facts(lagging, "up"), facts(lagging, "down")
	progress()
	event(db.EvBackfillState, "backfill:b1", map[string]any{})
	if facts(lagging, "up") == up || facts(lagging, "down") == down {
		t.Fatal("a backfill's state change after its progress not shown at once")
	}

	up = facts(lagging, "up")
	event("partitions.reported", "asset:up", map[string]any{"items": []map[string]any{{"partition": "2025-01-02"}}})
	if facts(lagging, "up") == up {
		t.Fatal("a report not shown at once")
	}

	short := exact
	short.MaxLag = time.Millisecond
	up = facts(short, "up")
	progress()
	time.Sleep(2 * time.Millisecond) // past the lag: the only way to test its end
	if facts(short, "up") == up {
		t.Fatal("progress not shown once the facts are MaxLag old")
	}
}
