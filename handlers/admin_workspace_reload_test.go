package handlers_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// Admins reload the workspace file from /admin/users; a file with problems
// is shown with its problems and changes nothing; operators may not.
func TestAdminReloadsWorkspaceFromThePage(t *testing.T) {
	env := testkit.New(t, testkit.Options{})
	admin := env.Client(t, auth.RoleAdmin)
	_, doc := pgGet(t, env, admin, "/admin/users")
	if doc.Find(`[data-testid="workspace-no-file"]`).Length() != 1 || doc.Find(`[data-testid="reload-workspace"]`).Length() != 0 {
		t.Fatal("the embedded workspace offers a reload")
	}
	file := filepath.Join(t.TempDir(), "ws.yaml")
	if err := os.WriteFile(file, []byte("assets:\n  r.one:\n    partitions: {static: [a]}\n    executor: {demo: {duration: 1ms}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cur := *env.Handler.Workspace()
	cur.Path = file
	env.Handler.SetWorkspace(&cur)
	_, doc = pgGet(t, env, admin, "/admin/users")
	if doc.Find(`[data-testid="reload-workspace"]`).Length() != 1 {
		t.Fatal("no reload button with a workspace file")
	}
	r := env.SessionPost(t, admin, "/admin/workspace/reload", url.Values{})
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("reload: %d", r.StatusCode)
	}
	_, doc = pgGet(t, env, admin, "/admin/users")
	if got := doc.Find(`[data-testid="notice"]`).Text(); !strings.Contains(got, "Workspace reloaded from "+file+": 1 assets.") || env.Handler.Workspace().Asset("r.one") == nil {
		t.Fatalf("after the reload: notice %q", got)
	}
	// A broken file: its problem (file and line) on the page, the workspace kept.
	if err := os.WriteFile(file, []byte("assets:\n  r.one:\n    partitions: {static: []}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = env.SessionPost(t, admin, "/admin/workspace/reload", url.Values{})
	page, err := goquery.NewDocumentFromReader(r.Body)
	if err != nil {
		t.Fatal(err)
	}
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
