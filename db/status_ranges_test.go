package db_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
)

// statusAnswers is what every reader of partition statuses answers about
// the partitions around keys (indexes 995..1115) of asset, as text.
func statusAnswers(t *testing.T, f fixture, asset int64, keys []string, times []time.Time) string {
	t.Helper()
	ctx := t.Context()
	var b strings.Builder
	put := func(what string, v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		j, _ := json.Marshal(v)
		fmt.Fprintf(&b, "%s: %s\n", what, j)
	}
	rows, err := f.store.StatusRange(ctx, asset, 990, 1120)
	put("status range", rows, err)
	rows, err = f.store.StatusRange(ctx, asset, 1030, 1040)
	put("status range inside a range", rows, err)
	for _, k := range keys {
		p, err := f.store.Partition(ctx, asset, k)
		if err == db.ErrNotFound {
			err = nil
		}
		put("partition "+k, p, err)
		st, err := f.store.LastAttemptStatus(ctx, asset, k)
		put("last attempt "+k, st, err)
	}
	for _, sts := range [][]string{nil, {db.StatusMaterialized}, {db.StatusFailed}, {db.StatusInProgress}, {db.StatusFailed, db.StatusMaterialized}} {
		for _, page := range []struct {
			after int64
			limit int
		}{{-1, 1000}, {990, 7}, {1035, 30}, {1100, 5}} {
			rows, err := f.store.PartitionsAfter(ctx, asset, page.after, sts, page.limit)
			put(fmt.Sprintf("partitions after %d %v limit %d", page.after, sts, page.limit), rows, err)
		}
	}
	for _, bk := range [][3]int64{{0, 2047, 1024}, {1000, 1119, 7}, {1024, 2047, 1024}, {1020, 1030, 1}} {
		c, err := f.store.BucketCounts(ctx, asset, bk[0], bk[1], bk[2])
		put(fmt.Sprintf("buckets %v", bk), c, err)
	}
	for _, r := range [][2]int64{{0, 5000}, {1001, 1100}, {1030, 1030}, {0, 1023}} {
		c, err := f.store.StatusCountsInRange(ctx, asset, r[0], r[1])
		put(fmt.Sprintf("counts %v", r), c, err)
	}
	sel, err := f.store.SelectionRows(ctx, asset, 990, 1120)
	put("selection rows", sel, err)
	miss, err := f.store.MissingAfter(ctx, asset, 990, 1200, 50)
	put("missing", miss, err)
	var idxs []int64
	for i := int64(1115); i >= 995; i -= 3 {
		idxs = append(idxs, i)
	}
	at, err := f.store.StatusesAt(ctx, asset, idxs)
	put("statuses at", sortedIdxStatuses(at), err)
	for _, run := range []string{"run_a", "run_b", "run_c"} {
		others, err := f.store.MaterializedByOthers(ctx, asset, run, db.Millis(times[0]), db.Millis(times[3]), keys)
		put("materialized by others than "+run, others, err)
	}
	ms, n, err := f.store.ReportedMillis(ctx, asset)
	put("reported millis", []any{ms, n}, err)
	return b.String()
}

// sortedIdxStatuses orders StatusesAt's answer (in no order) by index.
func sortedIdxStatuses(in []db.IdxStatus) []db.IdxStatus {
	out := append([]db.IdxStatus(nil), in...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Idx < out[j-1].Idx; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// An attempt's fresh, plainly materialized partitions are one status range
// per run of consecutive indexes within a block, not a status row each,
// and every reader of partition statuses answers exactly what it answers
// when they are rows.
func TestStatusRangesReadAsRows(t *testing.T) {
	eachRangedFixture(t, func(ctx context.Context, t *testing.T, f fixture, asset int64, keys []string, times []time.Time) {
		wantCount(t, f, `SELECT COUNT(*) FROM status_ranges`, 5, "status ranges")
		// Rows: 1050 (metadata), 1060 (failed), 1071..1099 (the range
		// there became rows when run_b started on 1090..1099 with their
		// status), and nothing of 1100..1109 (run_b's fresh ones).
		wantCount(t, f, `SELECT COUNT(*) FROM partition_status`, 2+29, "status rows")
		ranged := statusAnswers(t, f, asset, keys, times)
		for _, want := range []string{
			`"Key":"` + f.sp.Key(1030) + `","Idx":1030,"Status":"materialized","Materialized":true`,
			`"LastMatRunID":"run_b"`,
		} {
			if !strings.Contains(ranged, want) {
				t.Fatalf("answers lack %s:\n%s", want, ranged)
			}
		}
		if err := f.store.ExplodeStatusRanges(ctx, asset); err != nil {
			t.Fatal(err)
		}
		wantCount(t, f, `SELECT COUNT(*) FROM status_ranges`, 0, "status ranges after turning them into rows")
		wantCount(t, f, `SELECT COUNT(*) FROM partition_status`, 99+10, "status rows")
		if rows := statusAnswers(t, f, asset, keys, times); rows != ranged {
			t.Fatalf("readers answer differently from status ranges and from rows:\n%s", lineDiff(ranged, rows, "ranges", "rows"))
		}
	})
}

// A write to a partition a status range holds (a taint, a report) turns
// the range into rows first: the write applies as to a row, and the other
// partitions of the range read as before.
func TestStatusRangeWritesTurnItIntoRows(t *testing.T) {
	eachRangedFixture(t, func(ctx context.Context, t *testing.T, f fixture, asset int64, keys []string, times []time.Time) {
		neighbours := func() string {
			var b strings.Builder
			for _, i := range []int64{1024, 1031, 1049, 1100, 1104, 1106} {
				p, err := f.store.Partition(ctx, asset, f.sp.Key(i))
				if err != nil {
					t.Fatal(err)
				}
				j, _ := json.Marshal(p)
				fmt.Fprintf(&b, "%s\n", j)
			}
			return b.String()
		}
		before := neighbours()
		k := f.sp.Key(1030)
		if err := f.store.Taint(ctx, asset, "t.hourly", k, "bad rows", "ann", times[3].Add(time.Second)); err != nil {
			t.Fatalf("taint of a partition in a status range: %v", err)
		}
		p, err := f.store.Partition(ctx, asset, k)
		if err != nil || p.TaintedAt == nil || p.TaintReason == nil || *p.TaintReason != "bad rows" {
			t.Fatalf("partition after the taint: %+v %v", p, err)
		}
		n, err := f.store.StatusRangeCount(ctx)
		if err != nil || n != 4 {
			t.Fatalf("%d status ranges after the taint (%v), want 4: the one of 1024..1049 became rows", n, err)
		}
		// A report of a newer failure of 1105 (run_b's status range).
		res, err := f.store.RecordMaterializations(ctx, []db.Materialization{{AssetID: asset, AssetKey: "t.hourly", Partition: f.sp.Key(1105), Idx: 1105,
			Status: db.StatusFailed, Error: "late failure", CodeVersion: "v2", RunID: "ext", Source: "test", At: times[3].Add(2 * time.Second)}}, "test", "", times[3].Add(3*time.Second))
		if err != nil || res.Recorded != 1 {
			t.Fatalf("report: %+v %v", res, err)
		}
		p, err = f.store.Partition(ctx, asset, f.sp.Key(1105))
		if err != nil || p.Status != db.StatusFailed || !p.Materialized || p.LastMatRunID == nil || *p.LastMatRunID != "run_b" {
			t.Fatalf("1105 after a failed report: %+v %v, want failed, still materialized by run_b", p, err)
		}
		if n, err := f.store.StatusRangeCount(ctx); err != nil || n != 3 {
			t.Fatalf("%d status ranges after the report (%v), want 3", n, err)
		}
		// The other partitions of the two ranges read as before.
		if after := neighbours(); after != before {
			t.Fatalf("partitions beside those written changed:\n%s", lineDiff(before, after, "before", "after"))
		}
	})
}

// Ranges whose keys would interleave with another range's (keys that do not
// follow their indexes' order) are rows instead: the range that may hold a
// key is then always the first whose last key is not below it.
func TestStatusRangesKeyIntervalsDoNotMeet(t *testing.T) {
	eachFixture(t, func(ctx context.Context, t *testing.T, f fixture) {
		asset := f.ids["t.hourly"]
		at := f.now
		for n, keys := range [][]string{{"k-a", "k-c"}, {"k-b", "k-d"}, {"k-e", "k-f"}} {
			run := fmt.Sprintf("run_%d", n)
			if _, err := f.store.RawWriter().Exec(`INSERT INTO runs (id, run_key, backfill_id, chunk, seg, asset, asset_id, fingerprint, partitions, state, max_attempts, created_at, updated_at)
				VALUES (?,?,'bf_test',?,0,'t.hourly',?,'f',2,'queued',3,0,0)`, run, "key:"+run, n, asset); err != nil {
				t.Fatal(err)
			}
			var parts []db.PartRef
			for j, k := range keys {
				parts = append(parts, db.PartRef{Key: k, Idx: int64(5000 + 2*n + j), Status: db.StatusMaterialized})
			}
			start, end := at.Add(time.Duration(n)*time.Minute), at.Add(time.Duration(n)*time.Minute+time.Second)
			emit(t, f.store, db.EvAttemptsStarted, db.AttemptsStarted{Owner: "o", At: db.Millis(start), Attempts: []db.AttemptStart{
				{RunID: run, BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", CodeVersion: "v2", Parts: parts}}}, start)
			emit(t, f.store, db.EvAttemptsFinished, db.AttemptsFinished{At: db.Millis(end), Attempts: []db.AttemptEnd{
				{RunID: run, BackfillID: "bf_test", Attempt: 1, AssetID: asset, Asset: "t.hourly", State: db.AttemptSucceeded,
					RunState: db.RunSucceeded, CodeVersion: "v2", Started: db.Millis(start), Parts: parts}}}, end)
		}
		if n, err := f.store.StatusRangeCount(ctx); err != nil || n != 2 {
			t.Fatalf("%d status ranges (%v), want 2: k-a..k-c and k-e..k-f; k-b and k-d, which would meet the first, as rows", n, err)
		}
		var rows int
		if err := f.store.RawReader().Get(&rows, `SELECT COUNT(*) FROM partition_status WHERE asset_id=?`, asset); err != nil || rows != 2 {
			t.Fatalf("%d status rows (%v), want 2", rows, err)
		}
		for j, k := range []string{"k-a", "k-b", "k-c", "k-d", "k-e", "k-f"} {
			p, err := f.store.Partition(ctx, asset, k)
			if err != nil || p.Status != db.StatusMaterialized || p.Idx != int64(5000+[]int{0, 2, 1, 3, 4, 5}[j]) {
				t.Fatalf("partition %s: %+v %v", k, p, err)
			}
		}
		if _, err := f.store.Partition(ctx, asset, "k-bb"); err != db.ErrNotFound {
			t.Fatalf("a key between a range's keys, in none: %v, want not found", err)
		}
	})
}

// wantCount fails t unless query (a COUNT) answers want on f's store.
func wantCount(t *testing.T, f fixture, query string, want int, what string) {
	t.Helper()
	var n int
	if err := f.store.RawReader().Get(&n, query); err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Fatalf("%d %s, want %d", n, what, want)
	}
}

// A staleness fact load (whole, or a patch's) reads the status rows and the
// status ranges in one snapshot: a range turned into rows between its two
// reads (a taint of one of its partitions) leaves no partition out.
func TestStatusRangeFactsReadInOneSnapshot(t *testing.T) {
	eachRangedFixture(t, func(ctx context.Context, t *testing.T, f fixture, asset int64, keys []string, times []time.Time) {
		for _, patch := range []bool{false, true} {
			want, err := f.store.FactIdxs(ctx, asset, 990, 1120, patch)
			if err != nil {
				t.Fatal(err)
			}
			var lo int64
			if err := f.store.RawReader().Get(&lo, `SELECT MIN(lo) FROM status_ranges WHERE asset_id=? AND lo BETWEEN 990 AND 1120`, asset); err != nil {
				t.Fatal(err)
			}
			tainted := taintBetweenReads(t, f, asset, lo, times[3].Add(time.Second))
			got, err := f.store.FactIdxs(ctx, asset, 990, 1120, patch)
			f.store.SetBetweenReads(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !*tainted {
				t.Fatal("the load ran no taint between its reads")
			}
			if n, err := f.store.StatusRangeCount(ctx); err != nil || n != 5-btoi(patch)-1 {
				t.Fatalf("%d status ranges (%v) after the taint of %d, want %d", n, err, lo, 5-btoi(patch)-1)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("patch %v: a load across the taint of %d read %d partitions, want %d:\n%s", patch, lo, len(got), len(want),
					lineDiff(fmt.Sprintln(want), fmt.Sprintln(got), "before", "across"))
			}
		}
	})
}

// btoi is 1 for true.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The readers by key that feed the engine (the status an interrupted
// attempt's partitions had, and who else materialized a run's partitions)
// read the status rows and the status ranges in one snapshot: a range
// turned into rows between their two reads (a taint of another of its
// partitions) leaves the partition read as it was.
func TestStatusRangeKeyReadersReadInOneSnapshot(t *testing.T) {
	eachRangedFixture(t, func(ctx context.Context, t *testing.T, f fixture, asset int64, keys []string, times []time.Time) {
		// Two partitions in each of two ranges: one read, one tainted
		// between the reads.
		var los []int64
		if err := f.store.RawReader().Select(&los, `SELECT lo FROM status_ranges WHERE asset_id=? AND hi > lo ORDER BY lo LIMIT 2`, asset); err != nil || len(los) != 2 {
			t.Fatalf("status ranges: %v %v", los, err)
		}
		read := f.sp.Key(los[0] + 1)
		tainted := taintBetweenReads(t, f, asset, los[0], times[3].Add(time.Second))
		st, err := f.store.LastAttemptStatus(ctx, asset, read)
		f.store.SetBetweenReads(nil)
		if err != nil || !*tainted || st != db.StatusMaterialized {
			t.Fatalf("last attempt of %d across the taint of %d (%v): %q %v, want materialized", los[0]+1, los[0], *tainted, st, err)
		}
		read = f.sp.Key(los[1] + 1)
		tainted = taintBetweenReads(t, f, asset, los[1], times[3].Add(time.Second))
		others, err := f.store.MaterializedByOthers(ctx, asset, "run_x", db.Millis(times[0]), db.Millis(times[3]), []string{read})
		f.store.SetBetweenReads(nil)
		if err != nil || !*tainted || others[read] == "" {
			t.Fatalf("materialized by others than run_x, %d across the taint of %d (%v): %v %v, want its run", los[1]+1, los[1], *tainted, others, err)
		}
	})
}

// "What was this partition's instance at time T" reads the instances and
// the status ranges in one snapshot: a range turned into rows between its
// two reads (a taint of another of its partitions) leaves the partition's
// instance found.
func TestStatusRangeHistoryAtReadsInOneSnapshot(t *testing.T) {
	eachRangedFixture(t, func(ctx context.Context, t *testing.T, f fixture, asset int64, keys []string, times []time.Time) {
		var lo int64
		if err := f.store.RawReader().Get(&lo, `SELECT MIN(lo) FROM status_ranges WHERE asset_id=? AND hi > lo`, asset); err != nil {
			t.Fatal(err)
		}
		key := f.sp.Key(lo + 1)
		want, err := f.store.PartitionHistoryAt(ctx, asset, key, times[3])
		if err != nil || want.Canonical == nil {
			t.Fatalf("instance of %d at the end: %+v %v", lo+1, want, err)
		}
		tainted := taintBetweenReads(t, f, asset, lo, times[3].Add(time.Second))
		got, err := f.store.PartitionHistoryAt(ctx, asset, key, times[3])
		f.store.SetBetweenReads(nil)
		if err != nil || !*tainted || got.Canonical == nil || got.Canonical.ID != want.Canonical.ID {
			t.Fatalf("instance of %d across the taint of %d (%v): %+v %v, want %s", lo+1, lo, *tainted, got.Canonical, err, want.Canonical.ID)
		}
	})
}

// A run's checkpoint, read on a reader, reads rows, instances and status
// ranges in one snapshot: a range turned into rows between the reads (a
// taint of another of its partitions) leaves the run's partitions built.
func TestStatusRangeCheckpointReadsInOneSnapshot(t *testing.T) {
	eachRangedFixture(t, func(ctx context.Context, t *testing.T, f fixture, asset int64, keys []string, times []time.Time) {
		var lo int64
		if err := f.store.RawReader().Get(&lo, `SELECT MIN(lo) FROM status_ranges WHERE asset_id=? AND hi > lo AND run_id='run_a'`, asset); err != nil {
			t.Fatal(err)
		}
		tainted := taintBetweenReads(t, f, asset, lo, times[3].Add(time.Second))
		read := f.sp.Key(lo + 1)
		cp, err := f.store.RunCheckpoint(ctx, asset, "run_a", db.Millis(times[0]), []string{read})
		f.store.SetBetweenReads(nil)
		if err != nil || !*tainted || !cp.Built[read] || !cp.Done[read] {
			t.Fatalf("checkpoint of run_a over %d across the taint of %d (%v): %+v %v, want built and done", lo+1, lo, *tainted, cp, err)
		}
	})
}

// taintBetweenReads has the store's next reader taint asset's partition at
// index lo (at at) between its reads, once; the answer says whether it
// did. The caller clears the hook (SetBetweenReads(nil)) after its read.
func taintBetweenReads(t *testing.T, f fixture, asset, lo int64, at time.Time) *bool {
	t.Helper()
	tainted := new(bool)
	f.store.SetBetweenReads(func() {
		if *tainted {
			return
		}
		*tainted = true
		if err := f.store.Taint(t.Context(), asset, "t.hourly", f.sp.Key(lo), "bad rows", "ann", at); err != nil {
			t.Errorf("taint of %d: %v", lo, err)
		}
	})
	return tainted
}
