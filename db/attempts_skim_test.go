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

// SkimAttemptRuns reads an attempt's partitions as runs of consecutive
// indexes with the keys of each run's first and last, across its parts,
// failures and upstream failures and whatever the white space or the
// fields around them; a partition without an index, with index -1 (left
// its space) or with a key that has escapes makes the attempt NoRuns, to
// be read by its keys.
func TestSkimAttemptRuns(t *testing.T) {
	ref := func(i int64) db.PartRef {
		return db.PartRef{Key: fmt.Sprintf("k%03d", i), Idx: i, Status: "materialized", Metadata: json.RawMessage(`{"i": 99, "k": "x"}`)}
	}
	refs := func(is ...int64) []db.PartRef {
		var out []db.PartRef
		for _, i := range is {
			out = append(out, ref(i))
		}
		return out
	}
	ev := db.AttemptsFinished{At: 2, Attempts: []db.AttemptEnd{
		{RunID: "r1", Attempt: 1, AssetID: 4, Parts: refs(10, 11, 12, 14, 15, 3), Failures: refs(16, 17)},
		{RunID: "r2", Attempt: 1, AssetID: 5, Parts: append(refs(1, 2), db.PartRef{Key: `e"scaped`, Idx: 3})},
		{RunID: "r3", Attempt: 1, AssetID: 6, Parts: append(refs(1, 2), db.PartRef{Key: "gone", Idx: -1})},
		{RunID: "r4", Attempt: 1, AssetID: 7, Parts: []db.PartRef{}},
	}}
	want := [][]db.PartRun{
		{{Lo: 10, Hi: 12, First: "k010", Last: "k012"}, {Lo: 14, Hi: 15, First: "k014", Last: "k015"}, {Lo: 3, Hi: 3, First: "k003", Last: "k003"},
			{Lo: 16, Hi: 17, First: "k016", Last: "k017"}},
		nil, nil, nil,
	}
	for _, indent := range []bool{false, true} {
		b, _ := json.Marshal(ev)
		if indent {
			b, _ = json.MarshalIndent(ev, "", "  ")
		}
		var got []db.SkimmedAttempt
		if !db.SkimAttemptRuns(string(b), func(a db.SkimmedAttempt) { got = append(got, a) }) || len(got) != 4 {
			t.Fatalf("skimmed %d attempts of %.300s", len(got), b)
		}
		for i, a := range got {
			if !slices.Equal(a.Runs, want[i]) || a.NoRuns != (i == 1 || i == 2) || a.Parts != len(ev.Attempts[i].Parts) || a.Keys != nil {
				t.Fatalf("attempt %d: runs %+v NoRuns %v, %d parts; want %+v", i, a.Runs, a.NoRuns, a.Parts, want[i])
			}
		}
	}
	// A reference without an index.
	var got []db.SkimmedAttempt
	if !db.SkimAttemptRuns(`{"attempts":[{"asset_id":4,"parts":[{"k":"a","i":1},{"k":"b"}]}]}`, func(a db.SkimmedAttempt) { got = append(got, a) }) ||
		len(got) != 1 || !got[0].NoRuns || got[0].Runs != nil {
		t.Fatalf("a reference without its index: %+v", got)
	}
}
