package handlers

import (
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// The timeline summarizes each event once: events are never changed, and a
// backfill's attempts events are hundreds of kilobytes, so a refresh reads
// the payloads of new events only. (The test rewrites a stored payload,
// which Tessera never does, to see that it is not read again.)
func TestTimelineSummarizesEachEventOnce(t *testing.T) {
	ctx := t.Context()
	store := teststore.Open(t)
	now := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	appendEv := func(typ string, payload any) int64 {
		t.Helper()
		var id int64
		if err := store.Tx(ctx, func(tx *sqlx.Tx) error {
			var err error
			id, err = db.AppendEvent(ctx, tx, typ, "backfill:bf_t", "test", payload, "", now)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	planned := func(from, to int) map[string]any {
		var runs []map[string]any
		for c := from; c <= to; c++ {
			runs = append(runs, map[string]any{"chunk": c})
		}
		return map[string]any{"runs": runs}
	}
	first := appendEv(db.EvRunsPlanned, planned(0, 2))
	h := &Handler{Store: store}
	texts := func() []string {
		t.Helper()
		rows, err := h.timeline(ctx, "bf_t")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rows {
			out = append(out, r.Text)
		}
		return out
	}
	if got := texts(); len(got) != 1 || got[0] != "3 chunks planned (0–2)" {
		t.Fatalf("timeline %q", got)
	}
	if _, err := store.RawWriter().ExecContext(ctx, `UPDATE events SET payload = ? WHERE id = ?`, `{"runs":[{"chunk":7}]}`, first); err != nil {
		t.Fatal(err)
	}
	appendEv(db.EvRunsPlanned, planned(3, 3))
	got := texts()
	if len(got) != 2 || got[0] != "Chunk 3 planned" || got[1] != "3 chunks planned (0–2)" {
		t.Fatalf("timeline %q: want the new event summarized and the first one not read again", got)
	}
}

// The memo is bounded: beyond maxEventTexts the oldest summaries go.
func TestEventTextsBounded(t *testing.T) {
	var c eventTexts
	for id := range int64(maxEventTexts + 10) {
		c.put(id, "x")
	}
	if len(c.texts) > maxEventTexts || len(c.order) != len(c.texts) {
		t.Fatalf("%d texts, %d in order", len(c.texts), len(c.order))
	}
	if _, ok := c.get(0); ok {
		t.Fatal("the oldest summary is kept")
	}
	if _, ok := c.get(maxEventTexts + 9); !ok {
		t.Fatal("the newest summary is dropped")
	}
}
