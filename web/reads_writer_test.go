package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// TestReadsNeverUseTheWriter GETs every GET route of the router, with a
// backfill running (runs leased, one finished), through an admin session
// and an admin API token whose last use is old enough to be recorded
// again, and fails for each answer during which the store's writer was
// used on behalf of the request (db.Store.WriterUsesByReads). The engine
// uses the writer all the while; its uses are not the requests'. Reads go
// to the reader pool: the writer has one connection, which the engine
// holds a step at a time.
func TestReadsNeverUseTheWriter(t *testing.T) {
	t.Parallel()
	remote := testkit.NewAsyncRemote(t)
	env := testkit.New(t, testkit.Options{WorkspaceYAML: testkit.Assets(
		testkit.Asset("r.hourly", `{hourly: {start: "2026-01-01-00:00", end: "2026-02-01-00:00"}}`, "retries: {max_attempts: 1}", remote.Executor()),
		testkit.Asset("r.daily", "{daily: {start: 2026-01-01, end: 2026-02-01}}", "deps: [r.hourly]", remote.Executor()),
	) + `schedules:
  r.sched: {cron: "5 * * * *", assets: [r.daily]}
sensors:
  r.sensor: {assets: [r.daily], evaluator: {command: ["true"]}, interval: 1h}
`})
	env.StartEngine(t, jobs.Options{})
	admin := env.AdminToken()
	resp, created := testkit.APIRequest(t, env.URL, admin, "POST", "/api/v1/backfills",
		`{"assets":["r.hourly"],"selector":{"type":"range"},"chunk_size":24,"max_concurrent_runs":4}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create the backfill: %d %v", resp.StatusCode, created)
	}
	bf := created.(map[string]any)["id"].(string)
	// The first run finishes (materialized partitions, a finished run);
	// the others stay running: the remote never answers them.
	work := remote.Next(t)
	results := make([]string, len(work.Partitions))
	for i, p := range work.Partitions {
		results[i] = fmt.Sprintf(`{"partition":%q,"status":"materialized"}`, p)
	}
	if resp, out := testkit.APIRequest(t, env.URL, admin, "POST", "/api/v1/runs/"+work.RunID+"/complete",
		`{"results":[`+strings.Join(results, ",")+`]}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("complete run %s: %d %v", work.RunID, resp.StatusCode, out)
	}
	for range 4 {
		remote.Next(t)
	}
	if resp, out := testkit.APIRequest(t, env.URL, admin, "POST", "/api/v1/assets/r.hourly/watermark", `{"partition":"2026-01-01-23:00"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("set the watermark: %d %v", resp.StatusCode, out)
	}

	session := env.Client(t, auth.RoleAdmin)
	token := env.Token(t, auth.RoleAdmin)
	// Before each request, the session was last seen and the token last
	// used long ago, so that identifying them records their use anew.
	age := func() {
		old := db.Millis(time.Now().Add(-10 * time.Minute))
		for _, q := range []string{`UPDATE sessions SET last_seen_at = ?`, `UPDATE api_tokens SET last_used_at = ?`} {
			if _, err := env.Store.RawWriter().Exec(q, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	params := strings.NewReplacer(":name", "r.sched", ":key", "r.hourly", ":partition", "2026-01-01-05:00", "*", "app.css")
	swept := 0
	seen := map[string]bool{}
	for _, r := range env.Echo.Routes() {
		if r.Method != http.MethodGet || r.Path == apiFallback || seen[r.Path] {
			continue
		}
		seen[r.Path] = true
		path := r.Path
		switch {
		case strings.Contains(path, "/runs/:id"):
			path = strings.Replace(path, ":id", work.RunID, 1)
		case strings.Contains(path, "/backfills/:id"):
			path = strings.Replace(path, ":id", bf, 1)
		case strings.Contains(path, "sensors/:name"):
			path = strings.Replace(path, ":name", "r.sensor", 1)
		}
		path = params.Replace(path)
		switch {
		case strings.HasSuffix(path, "/stream"):
			path += "?once=1"
		case path == "/backfills/selection":
			path += "?asset=r.hourly"
		}
		for _, via := range []string{"session", "token"} {
			age()
			before := env.Store.WriterUsesByReads()
			status, body := readsGet(t, env, session, token, via, path)
			if status >= 400 {
				t.Errorf("GET %s via %s: HTTP %d: %.300s", path, via, status, body)
			}
			if n := env.Store.WriterUsesByReads() - before; n != 0 {
				t.Errorf("GET %s (route %s) via %s used the writer %d times; reads must use the reader pool", path, r.Path, via, n)
			}
			swept++
		}
	}
	if swept < 2*40 {
		t.Fatalf("only %d GETs swept", swept)
	}

	// A session past its idle timeout is forgotten on its next GET, which
	// answers as if signed out without waiting for the writer.
	ended := env.Client(t, auth.RoleViewer)
	if _, err := env.Store.RawWriter().Exec(`UPDATE sessions SET last_seen_at = ?`, db.Millis(time.Now().Add(-48*time.Hour))); err != nil {
		t.Fatal(err)
	}
	before := env.Store.WriterUsesByReads()
	if status, _ := readsGet(t, env, ended, "", "session", "/"); status != http.StatusSeeOther {
		t.Errorf("GET / with an ended session: HTTP %d, want 303 to /login", status)
	}
	if n := env.Store.WriterUsesByReads() - before; n != 0 {
		t.Errorf("GET / with an ended session used the writer %d times", n)
	}

	// The count is real: a writer use on behalf of a read is counted, and
	// the metric says so.
	before = env.Store.WriterUsesByReads()
	if err := env.Store.TouchSession(db.ForRead(context.Background()), "no-such-session", time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := env.Store.WriterUsesByReads(); got != before+1 {
		t.Fatalf("a writer use on behalf of a read: count %d, want %d", got, before+1)
	}
	_, metrics := readsGet(t, env, nil, token, "token", "/metrics")
	if want := fmt.Sprintf("tessera_db_writer_uses_by_reads_total %d\n", before+1); !strings.Contains(metrics, want) {
		t.Errorf("/metrics lacks %q", strings.TrimSpace(want))
	}
}

// readsGet GETs path through the session client or with the bearer token
// and returns the status and body.
func readsGet(t *testing.T, env *testkit.Env, session *http.Client, token, via, path string) (int, string) {
	t.Helper()
	client, bearer := session, ""
	if via == "token" {
		client, bearer = env.Anon(), token
	}
	resp, body := testkit.Fetch(t, client, http.MethodGet, env.URL+path, bearer)
	return resp.StatusCode, body
}
