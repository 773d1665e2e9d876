package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/catalog"
)

// An instance whose workspace differs from the cluster's (issue 23 audit):
// it writes nothing of its own, creates no backfill, takes no push and
// never leads; schedules, sensors and pools count in the comparison.

var refOnly = strings.TrimSuffix(schedAssets, "schedules:\n")

// TestCompareWorkspaceBeforeSync: before an instance writes anything, the
// package's CompareWorkspace names how its workspace differs from a live
// instance's, and nothing when it is the same.
func TestCompareWorkspaceBeforeSync(t *testing.T) {
	t.Parallel()
	a := liveInstance(t, refOnly)
	ctx := context.Background()
	if mm, err := CompareWorkspace(ctx, a.store, a.ws, 0); err != nil || mm != nil {
		t.Fatalf("same workspace: %v %v", mm, err)
	}
	other, err := catalog.ParseWorkspace("other.yaml", []byte(refOnly+"  x.extra:\n    partitions: {static: [a]}\n    executor: {demo: {duration: 1ms}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	mm, err := CompareWorkspace(ctx, a.store, other, 0)
	if err != nil || mm == nil || mm.Instance != a.eng.Owner() || strings.Join(mm.Assets, ",") != "x.extra" {
		t.Fatalf("other workspace: %+v %v, want A's instance and x.extra", mm, err)
	}
}

// TestWorkspaceFingerprintCoversAutomation: a workspace that only adds a
// schedule, a sensor or a pool, or changes one, differs, and the
// difference is named.
func TestWorkspaceFingerprintCoversAutomation(t *testing.T) {
	t.Parallel()
	parse := func(y string) *catalog.Workspace {
		t.Helper()
		ws, err := catalog.ParseWorkspace("t.yaml", []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		return ws
	}
	base := parse(refOnly)
	fp0, h0 := workspaceFingerprint(base)
	for _, c := range []struct{ yaml, want string }{
		{refOnly + "schedules:\n  nightly:\n    cron: \"0 0 * * *\"\n    assets: [ref.regions]\n", "schedule:nightly"},
		{refOnly + "sensors:\n  arrivals:\n    assets: [ref.regions]\n", "sensor:arrivals"},
		{"pools:\n  warehouse: {max_concurrent_runs: 2}\n" + refOnly, "pool:warehouse"},
	} {
		fp, h := workspaceFingerprint(parse(c.yaml))
		if fp == fp0 {
			t.Errorf("%s: same fingerprint as the workspace without it", c.want)
		}
		if got := strings.Join(differingAssets(h, h0), ","); got != c.want {
			t.Errorf("differing %q, want %q", got, c.want)
		}
	}
	// A change of a schedule's definition differs too; its line does not.
	a, _ := workspaceFingerprint(parse(refOnly + "schedules:\n  nightly:\n    cron: \"0 0 * * *\"\n    assets: [ref.regions]\n"))
	b, _ := workspaceFingerprint(parse(refOnly + "schedules:\n  nightly:\n    cron: \"0 1 * * *\"\n    assets: [ref.regions]\n"))
	moved, _ := workspaceFingerprint(parse(refOnly + "\nschedules:\n\n  nightly:\n    cron: \"0 0 * * *\"\n    assets: [ref.regions]\n"))
	if a == b || a != moved {
		t.Errorf("schedule fingerprints: %s %s %s", a, b, moved)
	}
}

// TestDifferingInstanceRefusesWrites: an instance whose workspace differs
// from a live instance's (only by a sensor) refuses to create a backfill
// (a conflict naming the instance and what differs, nothing written) and
// pushed events, and does not take the schedules' lease even when nobody
// holds it.
func TestDifferingInstanceRefusesWrites(t *testing.T) {
	t.Parallel()
	a := liveInstance(t, refOnly)
	ctx := context.Background()
	b := a.secondInstance(refOnly+"sensors:\n  arrivals:\n    assets: [ref.regions]\n", Options{})
	mm := b.eng.WorkspaceMismatch()
	if mm == nil || strings.Join(mm.Assets, ",") != "sensor:arrivals" {
		t.Fatalf("mismatch %+v, want sensor:arrivals", mm)
	}
	isRefusal := func(err error) {
		t.Helper()
		var ie *InputError
		if !errors.As(err, &ie) || !ie.Conflict || ie.Code != CodeWorkspaceDiffers || ie.Params["assets"] != "sensor:arrivals" ||
			!strings.Contains(ie.Msg, a.eng.Owner()) || !strings.Contains(ie.Msg, "nothing was written") {
			t.Fatalf("got %v, want a workspace_differs conflict naming A and sensor:arrivals", err)
		}
	}
	_, err := b.eng.Create(ctx, Request{Assets: []string{"ref.regions"}, Selector: Selector{Type: "all"}}, "", "test")
	isRefusal(err)
	_, err = b.eng.RetryFailed(ctx, "bf_none", RetryOptions{}, "test")
	isRefusal(err)
	_, err = b.eng.Push(ctx, "arrivals", PushEvent{MessageID: "m1", Partitions: []string{"eu"}}, "test")
	isRefusal(err)
	var n int
	if err := b.store.RawReader().Get(&n, `SELECT COUNT(*) FROM backfills`); err != nil || n != 0 {
		t.Fatalf("backfills written: %d %v", n, err)
	}
	if err := b.eng.lead(ctx); err != nil {
		t.Fatal(err)
	}
	if b.eng.Leading() {
		t.Fatal("the instance whose workspace differs leads the schedules and sensors")
	}
	// A, with the cluster's workspace, gets the lease nobody held.
	if err := a.eng.lead(ctx); err != nil || !a.eng.Leading() {
		t.Fatalf("A does not lead: %v", err)
	}
}

// TestEarliestInstanceReloadComparesWithAll: the instance serving the
// database longest, reloading a changed workspace while a later instance
// still serves the old one, is told it differs (it would be the latest
// once its workspace changes), so it does not sync it; the same workspace
// again agrees.
func TestEarliestInstanceReloadComparesWithAll(t *testing.T) {
	t.Parallel()
	a := liveInstance(t, refOnly)
	ctx := context.Background()
	b := a.secondInstance("", Options{})
	b.beat()
	if mm, err := a.eng.CompareWorkspace(ctx, a.ws); err != nil || mm != nil {
		t.Fatalf("the same workspace: %v %v", mm, err)
	}
	changed, err := catalog.ParseWorkspace("changed.yaml", []byte(refOnly+"sensors:\n  arrivals:\n    assets: [ref.regions]\n"))
	if err != nil {
		t.Fatal(err)
	}
	mm, err := a.eng.CompareWorkspace(ctx, changed)
	if err != nil || mm == nil || mm.Instance != b.eng.Owner() || strings.Join(mm.Assets, ",") != "sensor:arrivals" {
		t.Fatalf("changed workspace on the earliest instance: %+v %v, want it to differ from B's in sensor:arrivals", mm, err)
	}
}
