package handlers_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/testkit"
)

// A server without a workspace file has nothing to reload: 409 saying how
// to get one; with a file, the reload reads it again.
func TestWorkspaceReloadAPI(t *testing.T) {
	env := testkit.New(t, testkit.Options{})
	admin := env.Token(t, handlers.RoleAdmin)
	code, e := apiCall(t, env, admin, "POST", "/api/v1/workspace/reload", "")
	if code != http.StatusConflict || !strings.Contains(e["error"].(map[string]any)["message"].(string), "--workspace FILE") {
		t.Fatalf("reload without a file: %d %v", code, e)
	}
	file := filepath.Join(t.TempDir(), "ws.yaml")
	if err := os.WriteFile(file, []byte("assets:\n  r.one:\n    partitions: {static: [a]}\n    executor: {demo: {duration: 1ms}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cur := *env.Handler.Workspace()
	cur.Path = file
	env.Handler.SetWorkspace(&cur)
	code, out := apiCall(t, env, admin, "POST", "/api/v1/workspace/reload", "")
	if code != http.StatusOK || out["assets"].(float64) != 1 || env.Handler.Workspace().Asset("r.one") == nil {
		t.Fatalf("reload: %d %v", code, out)
	}
	if code, _ := apiCall(t, env, env.Token(t, handlers.RoleOperator), "POST", "/api/v1/workspace/reload", ""); code != http.StatusForbidden {
		t.Fatalf("operator reload: %d", code)
	}
}
