package handlers_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/testkit/pgtest"
)

// readyz is /readyz's status and answer (a transport error fails t).
func readyz(t *testing.T, env *testkit.Env) (int, handlers.Readiness) {
	t.Helper()
	var rd handlers.Readiness
	code, _ := getJSON(t, env.Anon(), env.URL+"/readyz", &rd)
	return code, rd
}

// TestReadyzWhenPostgresIsDown: /readyz answers 200 right after
// PostgreSQL restarted, says 503 "database unavailable" within its ping
// timeout while PostgreSQL is stopped, and 200 again once it is back. The
// cluster is the test's own.
func TestReadyzWhenPostgresIsDown(t *testing.T) {
	t.Parallel()
	k := pgtest.NewCluster(t)
	env := testkit.New(t, testkit.Options{DB: k.URL(t)})
	if code, rd := readyz(t, env); code != http.StatusOK {
		t.Fatalf("/readyz %d %+v, want 200", code, rd)
	}
	// A restart: the connections pooled before it are replaced, not
	// failed with (the readers' pool holds several: fill it first).
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			readyz(t, env)
		}()
	}
	wg.Wait()
	k.Restart(t)
	for i := range 8 {
		if code, rd := readyz(t, env); code != http.StatusOK {
			t.Fatalf("/readyz #%d right after a restart: %d %+v, want 200", i, code, rd)
		}
	}
	k.Stop(t)
	var rd handlers.Readiness
	testkit.Eventually(t, 10*time.Second, "/readyz to say the database is unavailable", func() bool {
		start := time.Now()
		var code int
		code, rd = readyz(t, env)
		if took := time.Since(start); took > handlers.ReadyzPingTimeout+2*time.Second {
			t.Fatalf("/readyz took %s with the database down", took)
		}
		return code == http.StatusServiceUnavailable && rd.Status == "database unavailable"
	})
	if !strings.Contains(rd.Reason, "does not answer") {
		t.Fatalf("reason %q", rd.Reason)
	}
	k.Start(t)
	testkit.Eventually(t, 20*time.Second, "/readyz to be ready again", func() bool {
		code, _ := readyz(t, env)
		return code == http.StatusOK
	})
}

// TestReadyzSaysWorkspaceDiffers: of two servers on one PostgreSQL
// database, the one started with a workspace that defines an asset
// differently answers /readyz 503 naming the asset (and does not plan);
// the first stays ready.
func TestReadyzSaysWorkspaceDiffers(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	ws := `assets:
  w.daily:
    partitions: {daily: {start: "2025-01-01"}}
    executor: {command: [sh, -c, 'true']}
`
	a := testkit.New(t, testkit.Options{WorkspaceYAML: ws, DB: url})
	engA := a.StartEngine(t, jobs.Options{})
	testkit.Eventually(t, 10*time.Second, "A to heartbeat", func() bool {
		return a.Count(t, `SELECT COUNT(*) FROM workers WHERE owner = ?`, engA.Owner()) == 1
	})
	b := testkit.New(t, testkit.Options{WorkspaceYAML: strings.Replace(ws, "'true'", "'echo changed'", 1), DB: url})
	engB := b.StartEngine(t, jobs.Options{})
	if mm := engB.WorkspaceMismatch(); mm == nil {
		t.Fatal("B's workspace differs from A's, and B does not know")
	}
	code, rd := readyz(t, b)
	if code != http.StatusServiceUnavailable || rd.Workspace == nil || !rd.Workspace.Differs ||
		strings.Join(rd.Workspace.Assets, ",") != "w.daily" || rd.Workspace.Instance != engA.Owner() ||
		!strings.Contains(rd.Reason, "w.daily") || !strings.Contains(rd.Reason, "same --workspace") || !strings.Contains(rd.Reason, "reload each instance") {
		t.Fatalf("B's /readyz %d %+v %+v", code, rd, rd.Workspace)
	}
	if code, rd := readyz(t, a); code != http.StatusOK || rd.Workspace != nil {
		t.Fatalf("A's /readyz %d %+v", code, rd)
	}
}
