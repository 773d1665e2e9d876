package handlers

import (
	"testing"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// TestPartitionOutcome covers every outcome a partition tile can show, from
// its chunk's run, the run's instances of it and the backfill's failures.
func TestPartitionOutcome(t *testing.T) {
	running := db.Backfill{State: db.BackfillRunning}
	run := func(state string) *db.Run { return &db.Run{ID: "run_1", State: state} }
	cases := []struct {
		name    string
		b       db.Backfill
		r       *db.Run
		in      instFold
		failure string
		want    string
	}{
		{"not planned", running, nil, instFold{}, "", views.OutcomePending},
		{"not planned, canceled", db.Backfill{State: db.BackfillCanceled}, nil, instFold{}, "", views.OutcomeCanceled},
		{"queued for a slot", running, run(db.RunQueued), instFold{}, "", views.OutcomeQueued},
		{"queued for a retry", running, run(db.RunQueued), instFold{last: db.StatusFailed}, "", views.OutcomeQueued},
		{"building", running, run(db.RunRunning), instFold{last: db.StatusInProgress}, "", views.OutcomeRunning},
		{"checkpointed while the run retries", running, run(db.RunRunning), instFold{materialized: true, last: db.StatusMaterialized}, "", views.OutcomeMaterialized},
		{"built", running, run(db.RunSucceeded), instFold{materialized: true, last: db.StatusMaterialized}, "", views.OutcomeMaterialized},
		{"failed", running, run(db.RunFailed), instFold{last: db.StatusFailed}, "failed", views.OutcomeFailed},
		{"upstream failed", running, run(db.RunFailed), instFold{}, "upstream_failed", views.OutcomeUpstreamFailed},
		{"terminated", running, run(db.RunCanceled), instFold{last: db.AttemptCanceled}, "", views.OutcomeCanceled},
		{"canceled before an attempt", running, run(db.RunCanceled), instFold{}, "", views.OutcomeCanceled},
		{"no instance of a succeeded run", running, run(db.RunSucceeded), instFold{}, "", views.OutcomeMaterialized},
	}
	for _, c := range cases {
		if got := partitionOutcome(c.b, c.r, c.in, c.failure); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
