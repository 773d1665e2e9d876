package handlers_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/testkit/pgtest"
)

// TestReloadOfDifferingWorkspaceDoesNotSync: of two servers on one
// PostgreSQL database, B reloads a workspace file that differs from A's:
// the reload answers 200 naming what differs, B serves it without writing
// it into the shared catalog (no new asset, no new definition version) and
// does not plan; once A is gone, B's workspace agrees with every live
// instance's and is synced into the catalog before B plans.
func TestReloadOfDifferingWorkspaceDoesNotSync(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	ws := "assets:\n  w.daily:\n    partitions: {static: [a, b]}\n    executor: {command: [sh, -c, 'true']}\n"
	a := testkit.New(t, testkit.Options{WorkspaceYAML: ws, DB: url})
	engA := a.NewEngine(t, nil, jobs.Options{LeaseTTL: time.Second})
	ctxA, stopA := context.WithCancel(context.Background())
	doneA := make(chan struct{})
	go func() { defer close(doneA); _ = engA.Run(ctxA, 0) }()
	t.Cleanup(func() { stopA(); <-doneA })
	testkit.Eventually(t, 10*time.Second, "A to heartbeat", func() bool {
		return a.Count(t, `SELECT COUNT(*) FROM workers WHERE owner = ?`, engA.Owner()) == 1
	})
	b := testkit.New(t, testkit.Options{WorkspaceYAML: ws, DB: url})
	file := filepath.Join(t.TempDir(), "ws.yaml")
	cur := *b.Handler.Workspace()
	cur.Path = file
	b.Handler.SetWorkspace(&cur)
	engB := b.StartEngine(t, jobs.Options{LeaseTTL: time.Second, WorkspaceSynced: b.Handler.WorkspaceSynced, SyncWorkspace: b.Handler.SyncUnsyncedWorkspace})
	if mm := engB.WorkspaceMismatch(); mm != nil {
		t.Fatalf("same workspace, B differs: %v", mm)
	}
	other := strings.Replace(ws, "'true'", "'echo changed'", 1) + "  w.extra:\n    partitions: {static: [x]}\n    executor: {command: [sh, -c, 'true']}\n"
	if err := os.WriteFile(file, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := apiCall(t, b, b.Token(t, auth.RoleAdmin), "POST", "/api/v1/workspace/reload", "")
	w, _ := out["workspace"].(map[string]any)
	if code != http.StatusOK || w == nil || w["differs"] != true || w["instance"] != engA.Owner() {
		t.Fatalf("reload of a differing workspace: %d %v, want 200 saying it differs from A's", code, out)
	}
	if as, _ := w["assets"].([]any); len(as) != 2 || as[0] != "w.daily" || as[1] != "w.extra" {
		t.Fatalf("differing %v, want w.daily and w.extra", w["assets"])
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM assets WHERE key = 'w.extra'`); n != 0 {
		t.Fatal("the differing workspace's new asset was written into the shared catalog")
	}
	if n := b.Count(t, `SELECT COUNT(*) FROM assets WHERE key = 'w.daily' AND definition_version = 1 AND removed = 0`); n != 1 {
		t.Fatal("the differing workspace changed w.daily in the shared catalog")
	}
	if engB.WorkspaceMismatch() == nil || !b.Handler.Workspace().Unsynced || b.Handler.Workspace().Asset("w.extra") == nil {
		t.Fatalf("B after the reload: mismatch %v, unsynced %v", engB.WorkspaceMismatch(), b.Handler.Workspace().Unsynced)
	}
	// A stops: B's workspace is the only live one; it is synced then.
	stopA()
	<-doneA
	testkit.Eventually(t, 15*time.Second, "B to agree once A is gone", func() bool {
		if err := engB.CheckWorkspace(context.Background()); err != nil {
			t.Fatal(err)
		}
		return engB.WorkspaceMismatch() == nil
	})
	if b.Handler.Workspace().Unsynced || b.Count(t, `SELECT COUNT(*) FROM assets WHERE key = 'w.extra' AND removed = 0`) != 1 ||
		b.Handler.Workspace().IDs["w.extra"] == 0 {
		t.Fatalf("B's workspace was not synced into the catalog once it agreed: unsynced %v, w.extra rows %d", b.Handler.Workspace().Unsynced,
			b.Count(t, `SELECT COUNT(*) FROM assets WHERE key = 'w.extra' AND removed = 0`))
	}
}
