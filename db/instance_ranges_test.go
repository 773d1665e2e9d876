package db_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// eachRangedFixture runs test on a fixture of each dialect (eachFixture)
// whose hourly asset (asset) went through rangedBackfill, with its keys and
// times; the test is too slow for the race pass and runs in parallel.
func eachRangedFixture(t *testing.T, test func(ctx context.Context, t *testing.T, f fixture, asset int64, keys []string, times []time.Time)) {
	t.Helper()
	teststore.SkipInRacePass(t)
	t.Parallel()
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		keys, times := rangedBackfill(t, f)
		test(ctx, t, f, f.ids["t.hourly"], keys, times)
	})
}

// rangedBackfill records two attempts of t.hourly through their events:
// run_a's first attempt over indexes 1000..1099 but 1070, crossing the
// block at 1024 (1050 materialized with metadata, 1060 failed, the rest
// plainly materialized), then run_b's second attempt over 1090..1109, all
// plainly materialized (1090..1099 again), its partitions listed in reverse
// index order. It returns the keys around them
// and the times of the attempts' starts and ends.
func rangedBackfill(t *testing.T, f fixture) (keys []string, times []time.Time) {
	t.Helper()
	asset := f.ids["t.hourly"]
	for chunk, run := range []string{"run_a", "run_b"} {
		if _, err := f.store.RawWriter().Exec(`INSERT INTO runs (id, run_key, backfill_id, chunk, seg, asset, asset_id, fingerprint, partitions, state, max_attempts, created_at, updated_at)
			VALUES (?,?,'bf_test',?,0,'t.hourly',?,'f',100,'queued',3,0,0)`, run, "key:"+run, chunk, asset); err != nil {
			t.Fatal(err)
		}
	}
	attempt := func(run string, n int64, lo, hi int64, start, end time.Time, status func(i int64) db.PartRef) {
		var started, finished []db.PartRef
		for i := lo; i <= hi; i++ {
			pr := status(i)
			if pr.Key == "" {
				continue
			}
			started = append(started, db.PartRef{Key: pr.Key, Idx: i, Prev: pr.Prev})
			finished = append(finished, pr)
		}
		if n > 1 {
			// A chunk of explicit keys need not be in index order.
			slices.Reverse(started)
			slices.Reverse(finished)
		}
		emit(t, f.store, db.EvAttemptsStarted, db.AttemptsStarted{Owner: "o", At: db.Millis(start), Attempts: []db.AttemptStart{
			{RunID: run, BackfillID: "bf_test", Attempt: n, AssetID: asset, Asset: "t.hourly", CodeVersion: "v2", Parts: started}}}, start)
		emit(t, f.store, db.EvAttemptsFinished, db.AttemptsFinished{At: db.Millis(end), Attempts: []db.AttemptEnd{
			{RunID: run, BackfillID: "bf_test", Attempt: n, AssetID: asset, Asset: "t.hourly", State: db.AttemptFailed, Error: "1 of 99 failed",
				RunState: db.RunQueued, CodeVersion: "v2", Started: db.Millis(start), Parts: finished}}}, end)
	}
	t0 := f.now
	attempt("run_a", 1, 1000, 1099, t0, t0.Add(3*time.Second), func(i int64) db.PartRef {
		pr := db.PartRef{Key: f.sp.Key(i), Idx: i, Status: db.StatusMaterialized}
		switch i {
		case 1070:
			return db.PartRef{}
		case 1050:
			pr.Metadata = json.RawMessage(`{"rows":7}`)
		case 1060:
			pr.Status, pr.Error = db.StatusFailed, "boom"
		}
		return pr
	})
	t1 := t0.Add(10 * time.Second)
	attempt("run_b", 2, 1090, 1109, t1, t1.Add(5*time.Second), func(i int64) db.PartRef {
		pr := db.PartRef{Key: f.sp.Key(i), Idx: i, Status: db.StatusMaterialized}
		if i < 1100 {
			pr.Prev = db.StatusMaterialized
		}
		return pr
	})
	for i := int64(995); i <= 1115; i++ {
		keys = append(keys, f.sp.Key(i))
	}
	return keys, []time.Time{t0, t0.Add(3 * time.Second), t1, t1.Add(5 * time.Second)}
}

// instanceAnswers is what every reader of instances answers about keys of
// asset, as text: a partition's history (all of it, and after its first
// instance), the runs' instances, run_a's checkpoint, the history at each
// of times and around them, the reported duration, and the view
// partition_instances itself.
func instanceAnswers(t *testing.T, f fixture, asset int64, keys []string, times []time.Time) string {
	t.Helper()
	ctx := t.Context()
	var b strings.Builder
	put := func(what string, v any, err error) {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		j, _ := json.Marshal(v)
		fmt.Fprintf(&b, "%s: %s\n", what, j)
	}
	for _, k := range keys {
		insts, err := f.store.Instances(ctx, asset, k, 10)
		put("history "+k, insts, err)
		if len(insts) > 0 {
			p := insts[0].Pos()
			older, err := f.store.InstancesBefore(ctx, asset, k, &p, 10)
			put("history after the first "+k, older, err)
		}
		for _, at := range times {
			for _, d := range []time.Duration{-time.Millisecond, 0, time.Millisecond} {
				h, err := f.store.PartitionHistoryAt(ctx, asset, k, at.Add(d))
				put(fmt.Sprintf("history at %v %s", at.Add(d), k), h, err)
			}
		}
	}
	ri, err := f.store.RunInstances(ctx, asset, []string{"run_a", "run_b"}, keys)
	put("run instances", ri, err)
	for _, run := range []string{"run_a", "run_b"} {
		cp, err := db.RunCheckpointOf(ctx, f.store.Reader(), asset, run, db.Millis(times[0]), keys)
		put("checkpoint "+run, cp, err)
	}
	ms, n, err := f.store.ReportedMillis(ctx, asset)
	put("reported millis", []any{ms, n}, err)
	all, err := f.store.AllInstances(ctx)
	put("every instance", all, err)
	return b.String()
}

// An attempt's plainly materialized partitions are recorded as index ranges
// (one row per run of consecutive indexes within a block), its others as
// rows, and every reader of instances answers exactly what it answers when
// all of them are rows.
func TestInstanceRangesReadAsRows(t *testing.T) {
	eachRangedFixture(t, func(ctx context.Context, t *testing.T, f fixture, asset int64, keys []string, times []time.Time) {

		// Status ranges (which hold the instances of partitions leased
		// without a row): run_a's 1000..1023, 1024..1049, 1051..1059,
		// 1061..1069, and run_b's 1100..1109. Instance ranges: 1071..1099
		// (run_a's status range there became rows when run_b started on
		// 1090..1099) and run_b's 1090..1099. Rows: 1050 (metadata) and
		// 1060 (failed).
		wantCount(t, f, `SELECT COUNT(*) FROM status_ranges`, 5, "status ranges")
		wantCount(t, f, `SELECT COUNT(*) FROM instance_ranges`, 2, "instance ranges")
		wantCount(t, f, `SELECT COUNT(*) FROM instance_rows`, 2, "instance rows")
		wantCount(t, f, `SELECT COUNT(*) FROM partition_instances`, 29+10+2, "instances in partition_instances")
		ranged := instanceAnswers(t, f, asset, keys, times)
		// Every answer holds what the attempts recorded.
		for _, want := range []string{
			`"ID":"` + db.AttemptInstanceIDs("run_a", 1, "t.hourly")(f.sp.Key(1030)) + `"`,
			`"ID":"` + db.AttemptInstanceIDs("run_b", 2, "t.hourly")(f.sp.Key(1095)) + `"`,
			`"Built":{"` + f.sp.Key(1000) + `":true`,
		} {
			if !strings.Contains(ranged, want) {
				t.Fatalf("answers lack %s:\n%s", want, ranged)
			}
		}
		// A report of run_a's attempt-1 instance is a replay, as of a row.
		res, err := f.store.RecordMaterializations(ctx, []db.Materialization{{AssetID: asset, AssetKey: "t.hourly", Partition: f.sp.Key(1030), Idx: 1030,
			Status: db.StatusMaterialized, CodeVersion: "v2", RunID: "run_a", Source: "test", At: times[1]}}, "test", "", times[3])
		if err != nil || res.Replayed != 1 {
			t.Fatalf("report of a ranged instance: %+v %v, want a replay", res, err)
		}

		if err := f.store.ExplodeStatusRanges(ctx, asset); err != nil {
			t.Fatal(err)
		}
		wantCount(t, f, `SELECT COUNT(*) FROM status_ranges`, 0, "status ranges after turning them into rows")
		wantCount(t, f, `SELECT COUNT(*) FROM partition_instances`, 99+20, "instances")
		if rows := instanceAnswers(t, f, asset, keys, times); rows != ranged {
			t.Fatalf("readers answer differently from status ranges and from rows:\n%s", lineDiff(ranged, rows, "before", "after"))
		}
		if err := f.store.ExpandInstanceRanges(ctx, asset); err != nil {
			t.Fatal(err)
		}
		wantCount(t, f, `SELECT COUNT(*) FROM instance_ranges`, 0, "instance ranges after expanding")
		wantCount(t, f, `SELECT COUNT(*) FROM instance_rows`, 99+20, "instance rows after expanding")
		if rows := instanceAnswers(t, f, asset, keys, times); rows != ranged {
			t.Fatalf("readers answer differently from ranges and from rows:\n%s", lineDiff(ranged, rows, "before", "after"))
		}
	})
}

// A re-index names partitions by other indexes: the asset's ranges become
// rows first, so that every partition keeps its history, and an attempt
// running meanwhile (which knows its partitions by their former indexes)
// records its instances as rows.
func TestReindexKeepsRangedInstances(t *testing.T) {
	eachRangedFixture(t, func(ctx context.Context, t *testing.T, f fixture, asset int64, keys []string, times []time.Time) {
		before := instanceAnswers(t, f, asset, keys, times)

		// An attempt running across the re-index (over 2000..2009).
		if _, err := f.store.RawWriter().Exec(`INSERT INTO runs (id, run_key, backfill_id, chunk, seg, asset, asset_id, fingerprint, partitions, state, max_attempts, created_at, updated_at)
		VALUES ('run_c','key:run_c','bf_test',2,0,'t.hourly',?,'f',10,'queued',3,0,0)`, asset); err != nil {
			t.Fatal(err)
		}
		var parts []db.PartRef
		for i := int64(2000); i < 2010; i++ {
			parts = append(parts, db.PartRef{Key: f.sp.Key(i), Idx: i})
		}
		start := times[3].Add(time.Second)
		emit(t, f.store, db.EvAttemptsStarted, db.AttemptsStarted{Owner: "o", At: db.Millis(start), Attempts: []db.AttemptStart{
			{RunID: "run_c", BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", CodeVersion: "v2", Parts: parts}}}, start)

		// The scheme now starts a day later: every index moves down by 24.
		ws, err := catalog.ParseWorkspace("t.yaml", []byte(strings.Replace(testWorkspace, `start: "2025-01-01-00:00"`, `start: "2025-01-02-00:00"`, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.store.SyncWorkspace(ctx, ws, "test", f.now); err != nil {
			t.Fatal(err)
		}
		if p, err := f.store.Partition(ctx, asset, f.sp.Key(1030)); err != nil || p.Idx != 1030-24 {
			t.Fatalf("partition after the re-index: %+v %v, want index %d", p, err, 1030-24)
		}
		if after := instanceAnswers(t, f, asset, keys, times); after != before {
			t.Fatalf("instances changed with the re-index:\n%s", lineDiff(before, after, "before", "after"))
		}

		end := start.Add(time.Second)
		for i := range parts {
			parts[i].Status = db.StatusMaterialized
		}
		emit(t, f.store, db.EvAttemptsFinished, db.AttemptsFinished{At: db.Millis(end), Attempts: []db.AttemptEnd{
			{RunID: "run_c", BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", State: db.AttemptSucceeded,
				RunState: db.RunQueued, CodeVersion: "v2", Started: db.Millis(start), Parts: parts}}}, end)
		id := db.AttemptInstanceIDs("run_c", 1, "t.hourly")
		for _, pr := range parts {
			insts, err := f.store.Instances(ctx, asset, pr.Key, 10)
			if err != nil || len(insts) != 1 || insts[0].ID != id(pr.Key) || insts[0].Status != db.StatusMaterialized {
				t.Fatalf("history of %s, built across the re-index: %+v %v", pr.Key, insts, err)
			}
		}
		var n int
		if err := f.store.RawReader().Get(&n, `SELECT COUNT(*) FROM instance_ranges`); err != nil || n != 0 {
			t.Fatalf("%d instance ranges after the re-index (%v), want none", n, err)
		}
	})
}
