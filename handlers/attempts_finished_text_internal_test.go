package handlers

import (
	"testing"

	"github.com/tessera-dev/tessera/db"
)

// An attempt that built every partition it ran, in a chunk that failed
// because partitions of a failed upstream were skipped, does not read as a
// plain success on the timeline.
func TestAttemptsFinishedTextChunkFailedUpstream(t *testing.T) {
	p := db.AttemptsFinished{Attempts: []db.AttemptEnd{
		{State: db.AttemptSucceeded, RunState: db.RunFailed, Error: "1 partition not built: an upstream partition failed"},
		{State: db.AttemptSucceeded, RunState: db.RunSucceeded},
	}}
	want := "2 attempts finished: 1 succeeded with skipped partitions (chunk failed), 1 succeeded — 1 partition not built: an upstream partition failed"
	if got := attemptsFinishedText(p); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}
