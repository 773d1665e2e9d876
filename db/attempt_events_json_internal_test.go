package db

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The attempts events' payloads are written by eventJSON byte for byte as
// json.Marshal writes them: every optional field set and unset, keys and
// errors that JSON or HTML escaping changes, metadata to compact, nil and
// empty lists.
func TestAttemptEventsJSON(t *testing.T) {
	t.Parallel()
	parts := []PartRef{
		{Key: "2025-01-01-00:00", Idx: 0},
		{Key: "2025-01-01-01:00", Idx: 1, Prev: StatusMaterialized, Status: StatusFailed, Error: "exit 1: <stderr> & \"quotes\"\n", Again: true},
		{Key: "ключ <b>", Idx: -1, InstanceID: "pi_explicit", Status: StatusMaterialized, Metadata: json.RawMessage(`{ "rows" : [1, 2],  "html": "<x>" }`)},
		{Key: "\u2028tab\t", Idx: 1 << 40, Status: StatusInProgress},
	}
	started := []AttemptsStarted{
		{Owner: "srv-1", At: 1795634859985, Attempts: []AttemptStart{
			{RunID: "run_a", BackfillID: "bf_1", Attempt: 1, AssetID: 3, Asset: "t.hourly", CodeVersion: "v1", Parts: parts},
			{RunID: "run_<b>", BackfillID: "bf_1", Attempt: 2, AssetID: 4, CodeVersion: "", Parts: []PartRef{}, UpstreamFailed: parts[:2]},
			{RunID: "run_c", Parts: nil},
		}},
		{Owner: "", Attempts: nil},
		{Attempts: []AttemptStart{}},
	}
	wantMarshalJSON(t, "attempts.started", started)
	finished := []AttemptsFinished{
		{At: 1795634859985, Attempts: []AttemptEnd{
			{RunID: "run_a", BackfillID: "bf_1", Attempt: 1, AssetID: 3, Asset: "t.hourly", State: AttemptSucceeded, Parts: parts, RunState: RunSucceeded,
				CodeVersion: "v1", Started: 1795634859000},
			{RunID: "run_b", BackfillID: "bf_1", Attempt: 3, AssetID: 3, State: AttemptFailed, Error: "1 of 4 failed: <boom> & more", Parts: parts[1:2],
				RunState: RunFailed, NotBefore: 1795634869000, Failures: parts[1:2], CodeVersion: "v2", Started: 5, Finished: 7},
			{RunID: "run_c", Parts: []PartRef{}, Failures: []PartRef{}},
			{RunID: "run_d"},
		}},
		{Attempts: nil, At: 0},
	}
	wantMarshalJSON(t, "attempts.finished", finished)
}

// wantMarshalJSON fails t unless every payload's eventJSON is what
// json.Marshal writes of it (typ names the event).
func wantMarshalJSON[P interface{ eventJSON() ([]byte, error) }](t *testing.T, typ string, payloads []P) {
	t.Helper()
	for _, p := range payloads {
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.eventJSON()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s:\ngot  %s (%v)\nwant %s", typ, got, err, want)
		}
	}
}
