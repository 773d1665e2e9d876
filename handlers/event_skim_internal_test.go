package handlers

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// The skimmed summaries of attempts events are eventText's, byte for byte:
// for payloads of one or many attempts, retries, errors with escapes and
// non-ASCII text, partitions with metadata, instance ids and failures, and
// empty or null lists; a payload it cannot read is left to eventText.
func TestSkimmedEventTexts(t *testing.T) {
	parts := func(n int, meta bool) []db.PartRef {
		var out []db.PartRef
		for i := range n {
			p := db.PartRef{Key: fmt.Sprintf("2025-01-01-%02d:00", i%24), Idx: int64(i), Status: "materialized"}
			if meta {
				p.Metadata = json.RawMessage(`{"rows": 12, "k": [1, {"parts": "x"}], "note": "a \"quoted\" ]} value"}`)
				p.InstanceID, p.Prev, p.Error, p.Again = "in_1", "in_0", "boom\n\ttab", true
			}
			out = append(out, p)
		}
		return out
	}
	started := []db.AttemptsStarted{
		{Owner: "w1", At: 5, Attempts: []db.AttemptStart{{RunID: "run_a", BackfillID: "bf", Attempt: 1, AssetID: 3, Asset: "a.b", CodeVersion: "v1", Parts: parts(3, false)}}},
		{Owner: "w1", At: 5, Attempts: []db.AttemptStart{{RunID: "run_\"q\"é", Attempt: 4, Parts: parts(1, true), UpstreamFailed: parts(2, false)}}},
		{Owner: "w2", At: 6, Attempts: []db.AttemptStart{{RunID: "r1", Attempt: 2, Parts: parts(100, false)}, {RunID: "r2", Attempt: 1, Parts: parts(7, true)}}},
		{Owner: "w3", Attempts: []db.AttemptStart{{RunID: "r1", Attempt: 1}}},
		{Owner: "w3"},
	}
	finished := []db.AttemptsFinished{
		{At: 9, Attempts: []db.AttemptEnd{{RunID: "r1", Attempt: 1, State: db.AttemptSucceeded, RunState: db.RunSucceeded, Parts: parts(5, false), CodeVersion: "v", Started: 3}}},
		{At: 9, Attempts: []db.AttemptEnd{
			{RunID: "r1", Attempt: 1, State: db.AttemptFailed, Error: "exit 1: \"oops\" — ünïcödé \u2028 " + strings.Repeat("long ", 40), RunState: db.RunQueued, NotBefore: 99, Parts: parts(2, true)},
			{RunID: "r2", Attempt: 2, State: db.AttemptSucceeded, RunState: db.RunFailed, Error: "1 partition not built", Parts: parts(3, false), Failures: parts(1, true), Finished: 12},
			{RunID: "r3", Attempt: 1, State: db.AttemptSucceeded, RunState: db.RunSucceeded},
		}},
		{},
	}
	var evs []db.Event
	for _, p := range started {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, db.Event{Type: db.EvAttemptsStarted, Payload: string(b)})
	}
	for _, p := range finished {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, db.Event{Type: db.EvAttemptsFinished, Payload: string(b)})
		// The same with white space between tokens.
		ind, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, db.Event{Type: db.EvAttemptsFinished, Payload: string(ind)})
	}
	for _, e := range evs {
		got, ok := skimmedEventText(e)
		if !ok {
			t.Fatalf("payload not skimmed: %.200s", e.Payload)
		}
		if want := eventText(e); got != want {
			t.Fatalf("skimmed %q\nwant    %q\npayload %.300s", got, want, e.Payload)
		}
	}
	for _, bad := range []string{``, `{`, `{"attempts":[{"run_id":"r","parts":[1,2}]}`, `{"attempts":[{"state":"x"]}`, `{"attempts":[]} x`, `[]`, `{"attempts":[{"attempt":"one"}]}`} {
		if got, ok := skimmedEventText(db.Event{Type: db.EvAttemptsFinished, Payload: bad}); ok {
			t.Fatalf("payload %q skimmed as %q, want it left to eventText", bad, got)
		}
	}
	if _, ok := skimmedEventText(db.Event{Type: db.EvRunsPlanned, Payload: `{"runs":[]}`}); ok {
		t.Fatal("a runs.planned event skimmed: only attempts events are")
	}
}

// Viewers asking for the same new events at once share one reading of
// their payloads: each event's payload is read once, however many
// summarize it concurrently.
func TestEventTextsReadEachPayloadOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := teststore.Open(t)
	now := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	var ids []int64
	if err := store.Tx(ctx, func(tx *sqlx.Tx) error {
		for c := range 30 {
			id, err := db.AppendEvent(ctx, tx, db.EvRunsPlanned, "backfill:bf_t", "test", map[string]any{"runs": []map[string]any{{"chunk": c}}}, "", now)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	evs, err := store.EventHeadsBySubject(ctx, "backfill:bf_t", 40)
	if err != nil {
		t.Fatal(err)
	}
	// Every claim to compute a summary is counted (under c.mu).
	claims := map[int64]int{}
	c := eventTexts{onClaim: func(id int64) { claims[id]++ }}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			texts, err := c.summarize(ctx, store, evs)
			if err != nil {
				errs <- err
				return
			}
			for i, e := range evs {
				if want := fmt.Sprintf("Chunk %d planned", int(e.ID-ids[0])); texts[i] != want {
					errs <- fmt.Errorf("event %d summarized %q, want %q", e.ID, texts[i], want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(claims) != len(evs) {
		t.Fatalf("%d of %d events claimed", len(claims), len(evs))
	}
	for id, n := range claims {
		if n != 1 {
			t.Errorf("event %d summarized %d times, want once", id, n)
		}
	}
}
