package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
)

// The engine records an attempt's instances when it ends, in one write each.
// While it runs, the partition's history, the run's partitions and the
// history at a time read the instance in progress from the status row that
// holds the lease: its id, run, code version and the attempt's start. When
// it ends, the history holds one instance per partition, finished, whatever
// its outcome.
func TestInProgressInstanceFromLease(t *testing.T) {
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		asset := f.ids["t.hourly"]
		queueRun(t, f, "run_a", 0, 2)
		k0, k1 := f.sp.Key(0), f.sp.Key(1)
		at := db.Millis(f.now)
		emit(t, f.store, db.EvAttemptsStarted, db.AttemptsStarted{Owner: "o", At: at, Attempts: []db.AttemptStart{
			{RunID: "run_a", BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", CodeVersion: "v2",
				Parts: []db.PartRef{{Key: k0, Idx: 0}, {Key: k1, Idx: 1}}},
		}}, f.now)
		id := db.AttemptInstanceIDs("run_a", 1, "t.hourly")

		var n int
		if err := f.store.RawReader().Get(&n, `SELECT COUNT(*) FROM partition_instances`); err != nil || n != 0 {
			t.Fatalf("%d instance rows written at the start (%v), want none", n, err)
		}
		insts, err := f.store.Instances(ctx, asset, k0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(insts) != 1 {
			t.Fatalf("history while running: %+v, want the instance in progress", insts)
		}
		if i := insts[0]; i.ID != id(k0) || i.RunID != "run_a" || i.Status != db.StatusInProgress || i.CodeVersion != "v2" ||
			i.StartedAt == nil || *i.StartedAt != at || i.CreatedAt != at || i.FinishedAt != nil || i.Source != "backfill" {
			t.Fatalf("in-progress instance %+v", i)
		}
		runInsts, err := f.store.RunInstances(ctx, asset, []string{"run_a"}, []string{k0, k1})
		if err != nil || len(runInsts) != 2 || runInsts[0].Status != db.StatusInProgress || runInsts[1].Status != db.StatusInProgress {
			t.Fatalf("run's instances while running: %+v %v", runInsts, err)
		}
		h, err := f.store.PartitionHistoryAt(ctx, asset, k1, f.now.Add(time.Second))
		if err != nil || h.LastAttempt == nil || h.LastAttempt.ID != id(k1) || h.LastAttempt.Status != db.StatusInProgress {
			t.Fatalf("history at a time while running: %+v %v", h.LastAttempt, err)
		}

		later := f.now.Add(2 * time.Second)
		end := db.AttemptEnd{RunID: "run_a", BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", State: db.AttemptFailed,
			Error: "1 of 2 partitions failed", RunState: db.RunQueued, CodeVersion: "v2", Started: at,
			Parts: []db.PartRef{{Key: k0, Idx: 0, Status: db.StatusMaterialized}, {Key: k1, Idx: 1, Status: db.StatusFailed, Error: "boom"}}}
		emit(t, f.store, db.EvAttemptsFinished, db.AttemptsFinished{At: db.Millis(later), Attempts: []db.AttemptEnd{end}}, later)
		for k, want := range map[string]string{k0: db.StatusMaterialized, k1: db.StatusFailed} {
			insts, err := f.store.Instances(ctx, asset, k, 10)
			if err != nil || len(insts) != 1 {
				t.Fatalf("history of %s after the attempt: %+v %v, want one instance", k, insts, err)
			}
			i := insts[0]
			if i.ID != id(k) || i.Status != want || i.RunID != "run_a" || i.CodeVersion != "v2" || i.StartedAt == nil || *i.StartedAt != at ||
				i.CreatedAt != at || i.FinishedAt == nil || *i.FinishedAt != db.Millis(later) {
				t.Fatalf("instance of %s after the attempt: %+v, want %s", k, i, want)
			}
			if want == db.StatusFailed && (i.Error == nil || *i.Error != "boom") {
				t.Fatalf("failed instance lost its error: %+v", i)
			}
		}
		var leases int
		if err := f.store.RawReader().Get(&leases, `SELECT COUNT(*) FROM partition_status WHERE lease_instance_id IS NOT NULL OR lease_run_id IS NOT NULL OR lease_code_version IS NOT NULL`); err != nil || leases != 0 {
			t.Fatalf("%d status rows keep a lease after the attempt (%v)", leases, err)
		}
		checkRollup(t, f.store)
	})
}

// Migration 11 gives in-progress rows of an older database the run and code
// version of their lease's instance, which older versions recorded in
// progress: the history shows that instance once, and finishing the
// attempt completes it in place.
func TestMigrationInstancesAtFinish(t *testing.T) {
	s := storeFrom(t, 10,
		`INSERT INTO assets (id, key, scheme_kind, scheme_description, scheme_signature, definition, created_at, updated_at) VALUES (1,'t.a','static','x','x','{}',0,0)`,
		`INSERT INTO partition_status (asset_id, partition_key, idx, status, materialized, lease_instance_id, updated_at) VALUES (1,'a',0,'in_progress',0,'pi_now',5)`,
		`INSERT INTO partition_instances (id, asset_id, partition_key, run_id, status, code_version, source, started_at, created_at) VALUES ('pi_now',1,'a','run_1','in_progress','v1','backfill',5,5)`,
	)
	var lease struct {
		Run  *string `db:"lease_run_id"`
		Code *string `db:"lease_code_version"`
	}
	if err := s.RawReader().Get(&lease, `SELECT lease_run_id, lease_code_version FROM partition_status WHERE asset_id=1 AND partition_key='a'`); err != nil ||
		lease.Run == nil || *lease.Run != "run_1" || lease.Code == nil || *lease.Code != "v1" {
		t.Fatalf("lease after migration: %+v %v, want run_1 and v1", lease, err)
	}
	ctx := t.Context()
	insts, err := s.Instances(ctx, 1, "a", 10)
	if err != nil || len(insts) != 1 || insts[0].ID != "pi_now" || insts[0].Status != db.StatusInProgress {
		t.Fatalf("history of an attempt started before: %+v %v, want pi_now once", insts, err)
	}
	end := db.AttemptEnd{RunID: "run_1", BackfillID: "bf", Attempt: 1, AssetID: 1, State: db.AttemptSucceeded, RunState: db.RunQueued, CodeVersion: "v1", Started: 5,
		Parts: []db.PartRef{{Key: "a", Idx: 0, InstanceID: "pi_now", Status: db.StatusMaterialized}}}
	emit(t, s, db.EvAttemptsFinished, db.AttemptsFinished{At: 9, Attempts: []db.AttemptEnd{end}}, time.UnixMilli(9))
	insts, err = s.Instances(ctx, 1, "a", 10)
	if err != nil || len(insts) != 1 || insts[0].ID != "pi_now" || insts[0].Status != db.StatusMaterialized || insts[0].FinishedAt == nil || *insts[0].FinishedAt != 9 {
		t.Fatalf("history after the attempt: %+v %v, want pi_now materialized at 9", insts, err)
	}
}
