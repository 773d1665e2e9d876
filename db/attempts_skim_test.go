package db_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/tessera-dev/tessera/db"
)

// SkimAttempts reads what encoding/json reads of an attempts event: each
// attempt's run, attempt, asset, outcome and error, its number of
// partitions, and the keys of its parts, failures and upstream failures
// (escaped keys, metadata holding "k" fields and white space included).
func TestSkimAttemptsKeys(t *testing.T) {
	ref := func(k string, meta bool) db.PartRef {
		r := db.PartRef{Key: k, Idx: 3, Status: "materialized"}
		if meta {
			r.Metadata = json.RawMessage(`{"k": "not a key", "rows": [1, {"k": 2}]}`)
			r.Error = "\"quoted\" \\ error"
		}
		return r
	}
	var parts []db.PartRef
	for i := range 50 {
		parts = append(parts, ref(fmt.Sprintf("2025-01-01-%02d:00", i%24), i%7 == 0))
	}
	payloads := []any{
		db.AttemptsStarted{Owner: "w", At: 1, Attempts: []db.AttemptStart{
			{RunID: "r1", Attempt: 1, AssetID: 4, Asset: "a", Parts: parts, UpstreamFailed: []db.PartRef{ref("u\"1\u00e9", true)}},
			{RunID: "r2", Attempt: 3, AssetID: 5},
		}},
		db.AttemptsFinished{At: 2, Attempts: []db.AttemptEnd{
			{RunID: "r1", Attempt: 1, AssetID: 4, State: db.AttemptFailed, Error: "boom\n", RunState: db.RunFailed, Parts: parts[:3], Failures: []db.PartRef{ref("f1", false)}},
			{RunID: "r3", Attempt: 2, AssetID: 6, State: db.AttemptSucceeded, RunState: db.RunSucceeded, Parts: []db.PartRef{}},
		}},
	}
	type attempt struct {
		RunID          string       `json:"run_id"`
		Attempt        int64        `json:"attempt"`
		AssetID        int64        `json:"asset_id"`
		State          string       `json:"state"`
		RunState       string       `json:"run_state"`
		Error          string       `json:"error"`
		Parts          []db.PartRef `json:"parts"`
		Failures       []db.PartRef `json:"failures"`
		UpstreamFailed []db.PartRef `json:"upstream_failed"`
	}
	for _, p := range payloads {
		for _, indent := range []bool{false, true} {
			b, err := json.Marshal(p)
			if indent {
				b, err = json.MarshalIndent(p, "", "\t")
			}
			if err != nil {
				t.Fatal(err)
			}
			var want struct {
				Attempts []attempt `json:"attempts"`
			}
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			var got []db.SkimmedAttempt
			if !db.SkimAttempts(string(b), true, func(a db.SkimmedAttempt) { got = append(got, a) }) {
				t.Fatalf("not skimmed: %.200s", b)
			}
			if len(got) != len(want.Attempts) {
				t.Fatalf("%d attempts skimmed, want %d", len(got), len(want.Attempts))
			}
			for i, w := range want.Attempts {
				var keys []string
				for _, refs := range [][]db.PartRef{w.Parts, w.Failures, w.UpstreamFailed} {
					for _, r := range refs {
						keys = append(keys, r.Key)
					}
				}
				g := got[i]
				if g.RunID != w.RunID || g.Attempt != w.Attempt || g.AssetID != w.AssetID || g.State != w.State || g.RunState != w.RunState ||
					g.Error != w.Error || g.Parts != len(w.Parts) || !slices.Equal(g.Keys, keys) {
					t.Fatalf("attempt %d skimmed %+v\nwant %+v with keys %q", i, g, w, keys)
				}
			}
		}
	}
}
