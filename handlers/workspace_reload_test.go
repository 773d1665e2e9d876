package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/testkit/pgtest"
)

// A server without a workspace file has nothing to reload: 409 saying how
// to get one; with a file, the reload reads it again.
func TestWorkspaceReloadAPI(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	admin := env.Token(t, auth.RoleAdmin)
	code, e := apiCall(t, env, admin, "POST", "/api/v1/workspace/reload", "")
	if code != http.StatusConflict || !strings.Contains(e["error"].(map[string]any)["message"].(string), "--workspace FILE") {
		t.Fatalf("reload without a file: %d %v", code, e)
	}
	file := useWorkspaceFile(t, env)
	code, out := apiCall(t, env, admin, "POST", "/api/v1/workspace/reload", "")
	if code != http.StatusOK || out["assets"].(float64) != 1 || env.Handler.Workspace().Asset("r.one") == nil {
		t.Fatalf("reload: %d %v", code, out)
	}
	if code, _ := apiCall(t, env, env.Token(t, auth.RoleOperator), "POST", "/api/v1/workspace/reload", ""); code != http.StatusForbidden {
		t.Fatalf("operator reload: %d", code)
	}

	// While a backfill of r.one runs, a reload may not remove r.one nor
	// change its partitions (its chunks are positions in the old key space).
	if err := os.WriteFile(file, []byte("assets:\n  r.one:\n    partitions: {static: [a, b]}\n    executor: {demo: {duration: 30s}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := apiCall(t, env, admin, "POST", "/api/v1/workspace/reload", ""); code != http.StatusOK {
		t.Fatalf("reload: %d %v", code, out)
	}
	env.StartEngine(t, jobs.Options{})
	b := apiCreate(t, env, admin, `{"assets":["r.one"],"selector":{"type":"range"},"chunk_size":1,"max_concurrent_runs":1}`)
	id := b["id"].(string)
	for _, ws := range []string{
		"assets:\n  r.two:\n    partitions: {static: [a]}\n    executor: {demo: {duration: 1ms}}\n",
		"assets:\n  r.one:\n    partitions: {static: [a, b, c]}\n    executor: {demo: {duration: 1ms}}\n",
	} {
		if err := os.WriteFile(file, []byte(ws), 0o644); err != nil {
			t.Fatal(err)
		}
		code, e := apiCall(t, env, admin, "POST", "/api/v1/workspace/reload", "")
		if msg, _ := e["error"].(map[string]any)["message"].(string); code != http.StatusConflict || !strings.Contains(msg, id) {
			t.Fatalf("reload under a running backfill: %d %v", code, e)
		}
	}
	if env.Handler.Workspace().Asset("r.one") == nil || len(env.Handler.Workspace().Asset("r.one").Scheme.(catalog.StaticScheme).StaticKeys()) != 2 {
		t.Fatal("a refused reload changed the workspace")
	}
	// Once the backfill is canceled, the same file reloads.
	if code, e := apiCall(t, env, admin, "POST", "/api/v1/backfills/"+id+"/cancel", `{"terminate":true}`); code != http.StatusOK {
		t.Fatalf("cancel: %d %v", code, e)
	}
	apiWaitState(t, env, admin, id, "CANCELED")
	if code, out := apiCall(t, env, admin, "POST", "/api/v1/workspace/reload", ""); code != http.StatusOK {
		t.Fatalf("reload after the cancel: %d %v", code, out)
	}
}

// Admins reload the workspace file from /admin/users; a file with problems
// is shown with its problems and changes nothing; operators may not.
func TestAdminReloadsWorkspaceFromThePage(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	admin := env.Client(t, auth.RoleAdmin)
	_, doc := pgGet(t, env, admin, "/admin/users")
	if doc.Find(`[data-testid="workspace-no-file"]`).Length() != 1 || doc.Find(`[data-testid="reload-workspace"]`).Length() != 0 {
		t.Fatal("the embedded workspace offers a reload")
	}
	file := useWorkspaceFile(t, env)
	_, doc = pgGet(t, env, admin, "/admin/users")
	if doc.Find(`[data-testid="reload-workspace"]`).Length() != 1 {
		t.Fatal("no reload button with a workspace file")
	}
	r := env.SessionPost(t, admin, "/admin/workspace/reload", url.Values{})
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("reload: %d", r.StatusCode)
	}
	_, doc = pgGet(t, env, admin, "/admin/users")
	if got := doc.Find(`[data-testid="notice"]`).Text(); !strings.Contains(got, "Workspace reloaded from "+file+": 1 asset.") || env.Handler.Workspace().Asset("r.one") == nil {
		t.Fatalf("after the reload: notice %q", got)
	}
	// One asset is "1 asset", not "1 assets".
	if got := doc.Find(`[data-testid="workspace-source"]`).Text(); !strings.HasSuffix(got, ": 1 asset.") {
		t.Fatalf("workspace source %q, want …: 1 asset.", got)
	}
	// A broken file: its problem (file and line) on the page, the workspace kept.
	if err := os.WriteFile(file, []byte("assets:\n  r.one:\n    partitions: {static: []}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = env.SessionPost(t, admin, "/admin/workspace/reload", url.Values{})
	page := pgDoc(t, r)
	msg := page.Find(`[data-testid="form-error"]`).Text()
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(msg, "was not reloaded") || !strings.Contains(msg, "ws.yaml:3") {
		t.Fatalf("broken file: %d %q", r.StatusCode, msg)
	}
	if env.Handler.Workspace().Asset("r.one") == nil {
		t.Fatal("a refused reload changed the workspace")
	}
	if r := env.SessionPost(t, env.Client(t, auth.RoleOperator), "/admin/workspace/reload", url.Values{}); r.StatusCode != http.StatusForbidden {
		t.Fatalf("operator reload: %d", r.StatusCode)
	}
}

// useWorkspaceFile writes a workspace file of one asset (r.one) and makes
// it the file the server reloads; it returns its path.
func useWorkspaceFile(t *testing.T, env *testkit.Env) string {
	t.Helper()
	return env.UseWorkspaceFile(t, "assets:\n  r.one:\n    partitions: {static: [a]}\n    executor: {demo: {duration: 1ms}}\n")
}

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
