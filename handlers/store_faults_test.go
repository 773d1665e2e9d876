package handlers_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/testkit/logbuf"
	"github.com/tessera-dev/tessera/testkit/pgtest"
)

func getJSON(t *testing.T, c *http.Client, url string, v any) (int, http.Header) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: decode: %v", url, err)
	}
	return resp.StatusCode, resp.Header
}

var writeFailuresMetric = regexp.MustCompile(`(?m)^tessera_db_write_failures_total\{cause="disk_full"\} (\d+)$`)

// TestStoreThatCannotWriteSaysSo: on a full database a mutating API call
// answers 503 with Retry-After and a message naming the cause and writes
// nothing; /readyz answers 503 with the reason; every page shows a banner;
// the metric counts the failure; a running backfill's waiting says the
// store cannot write. When space returns, all of it goes by itself.
func TestStoreThatCannotWriteSaysSo(t *testing.T) {
	t.Parallel()
	// Pages of 1 KiB: FillForTest caps the database at the pages it has,
	// so that a write needing a new page fails as on a full disk. VACUUM
	// packs every page but the last of each table and index, and the rows
	// of the small backfill below may fit in what those have left: with
	// pages of 16 KiB they did (201 Created); in pages of 1 KiB they do not.
	env := testkit.New(t, testkit.Options{PageSize: 1024, WorkspaceYAML: testkit.Assets(
		testkit.Asset("w.slow", testkit.Daily, "retries: {max_attempts: 1}", testkit.Shell(`sleep 30`)),
	)})
	eng := env.NewEngine(t, nil, jobs.Options{})
	testkit.RunEngine(t, eng)
	ctx := t.Context()
	env.Store.SetFaultHold(100 * time.Millisecond) // the recovery below is watched
	viewer := env.Client(t, auth.RoleViewer)
	a := pgCreateBF(t, eng, "w.slow", "2025-01-01", "2025-01-04", 1)
	cancelAtEnd(t, eng, a.ID)
	firstRun(t, env, a.ID, db.RunRunning, "the backfill's first chunk to run")
	before, err := env.Store.Backfills(ctx, nil, "", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	free := env.Store.FillForTest(true, t.Fatal)

	// A mutating call: 503, Retry-After, the cause named, nothing written.
	body := `{"assets":["w.slow"],"selector":{"type":"range","start":"2025-02-01","end":"2025-02-03"},"chunk_size":1,"title":"while full"}`
	resp := env.Post(t, "/api/v1/backfills", body)
	raw := readBody(t, resp)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("POST /api/v1/backfills on a full database: %d %s, want 503", resp.StatusCode, raw)
	}
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra <= 0 {
		t.Errorf("Retry-After = %q, want a number of seconds", resp.Header.Get("Retry-After"))
	}
	var eb struct {
		Error handlers.UserError `json:"error"`
	}
	if err := json.Unmarshal([]byte(raw), &eb); err != nil {
		t.Fatal(err)
	}
	if eb.Error.Code != "store_unwritable" || !strings.Contains(eb.Error.Message, "the database cannot be written: disk full") {
		t.Errorf("error = %+v, want code store_unwritable and a message naming the cause", eb.Error)
	}
	if strings.Contains(strings.ToLower(eb.Error.Message), "sqlite") || strings.Contains(eb.Error.Message, "database or disk is full") {
		t.Errorf("the message leaks the driver's text: %q", eb.Error.Message)
	}
	after, err := env.Store.Backfills(ctx, nil, "", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("the refused call wrote a backfill: %d backfills, %d before", len(after), len(before))
	}

	// /readyz: 503 with the reason.
	var rd handlers.Readiness
	code, _ := getJSON(t, env.Anon(), env.URL+"/readyz", &rd)
	if code != http.StatusServiceUnavailable || !strings.Contains(rd.Reason, "disk full") || rd.Database == nil || rd.Database.Writable || rd.Database.Cause != "disk_full" || rd.Database.Since == "" {
		t.Errorf("/readyz on a full database: %d %+v %+v, want 503 with the reason", code, rd, rd.Database)
	}

	// Every page: the banner.
	for _, p := range []string{"/", "/backfills", "/status"} {
		_, doc := pgGet(t, env, viewer, p)
		if b := doc.Find(`[data-testid="store-banner"]`).Text(); !strings.Contains(b, "cannot be written") || !strings.Contains(b, "disk full") {
			t.Errorf("%s banner = %q, want it to say the database cannot be written: disk full", p, b)
		}
	}

	// The metric.
	_, mraw := env.GetBody(t, "/metrics")
	if m := writeFailuresMetric.FindSubmatch(mraw); m == nil || string(m[1]) == "0" {
		t.Errorf("/metrics: tessera_db_write_failures_total{cause=\"disk_full\"} missing or 0: %s", m)
	}

	// The running backfill waits for the store: API and page.
	var bj struct {
		Waiting *jobs.RunWait `json:"waiting"`
	}
	getJSON(t, viewer, env.URL+"/api/v1/backfills/"+a.ID, &bj)
	if bj.Waiting == nil || !strings.Contains(bj.Waiting.Reason, "cannot be written since") || !strings.Contains(bj.Waiting.Reason, "disk full") {
		t.Errorf("GET /api/v1/backfills/%s waiting = %+v, want the store's fault", a.ID, bj.Waiting)
	}
	_, doc := pgGet(t, env, viewer, "/backfills/"+a.ID)
	if eta := doc.Find(`[data-testid="eta"]`).Text(); !strings.Contains(eta, "cannot be written since") {
		t.Errorf("backfill page ETA = %q, want the store's fault", eta)
	}

	// Space returns: ready again, no banner, no store wait, writes work.
	free()
	testkit.Eventually(t, 15*time.Second, "/readyz to answer 200 after space returned", func() bool {
		var rd handlers.Readiness
		code, _ := getJSON(t, env.Anon(), env.URL+"/readyz", &rd)
		return code == http.StatusOK && rd.Database != nil && rd.Database.Writable
	})
	_, doc = pgGet(t, env, viewer, "/")
	if n := doc.Find(`[data-testid="store-banner"]`).Length(); n != 0 {
		t.Errorf("the banner stays after space returned: %q", doc.Find(`[data-testid="store-banner"]`).Text())
	}
	bj.Waiting = nil
	getJSON(t, viewer, env.URL+"/api/v1/backfills/"+a.ID, &bj)
	if bj.Waiting != nil && strings.Contains(bj.Waiting.Reason, "cannot be written") {
		t.Errorf("waiting after space returned: %+v", bj.Waiting)
	}
	resp = env.Post(t, "/api/v1/backfills", body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /api/v1/backfills after space returned: %d %s", resp.StatusCode, readBody(t, resp))
	}
	var created struct {
		ID string `json:"id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&created)
	if created.ID != "" {
		cancelAtEnd(t, eng, created.ID)
	}
}

// TestEngineWaitsOutAStoreThatCannotWrite: an attempt that ends while the
// database is full cannot be recorded; the engine says so once in the log
// (a warning, not an error a tick), retries each second, and records it
// when space returns: the backfill finishes by itself.
func TestEngineWaitsOutAStoreThatCannotWrite(t *testing.T) {
	t.Parallel()
	env := testkit.WithAssets(t,
		testkit.Asset("w.big", testkit.Daily, "retries: {max_attempts: 1}", `executor:
  shell: true
  command:
    - |
      sleep 1.5; printf '{"partition":"%s","status":"materialized","metadata":{"blob":"%s"}}\n' "$TESSERA_PARTITIONS" "$(head -c 30000 /dev/zero | tr '\0' a)" > "$TESSERA_REPORT"`),
	)
	ctx := t.Context()
	env.Store.SetFaultHold(100 * time.Millisecond)
	logs := &logbuf.Buffer{}
	eng := env.NewEngine(t, slog.New(slog.NewTextHandler(logs, nil)), jobs.Options{})
	testkit.RunEngine(t, eng)

	a := pgCreateBF(t, eng, "w.big", "2025-01-01", "2025-01-01", 1)
	firstRun(t, env, a.ID, db.RunRunning, "the chunk to run")
	free := env.Store.FillForTest(true, t.Fatal)
	testkit.Eventually(t, 15*time.Second, "the engine to retry recording the attempt a few times", func() bool {
		return env.Store.WriteFailures()[db.CauseDiskFull] >= 3
	})
	if b, _ := env.Store.Backfill(ctx, a.ID); b.State != db.BackfillRunning || b.PartitionsMaterialized != 0 {
		t.Fatalf("while full the backfill is %s with %d materialized, want RUNNING with none recorded", b.State, b.PartitionsMaterialized)
	}
	l := logs.String()
	if n := strings.Count(l, "the store cannot write"); n != 1 || !strings.Contains(l, "cause=disk_full") {
		t.Errorf("the log says the store cannot write %d times (want once, with the cause):\n%s", n, l)
	}
	if strings.Contains(l, "controller step") {
		t.Errorf("the log has controller step errors while the store is full:\n%s", l)
	}

	free()
	testkit.Eventually(t, 15*time.Second, "the backfill to finish after space returned", func() bool {
		b, err := env.Store.Backfill(ctx, a.ID)
		return err == nil && db.BackfillTerminal(b.State)
	})
	if b, _ := env.Store.Backfill(ctx, a.ID); b.PartitionsMaterialized != 1 {
		t.Errorf("after space returned: %s with %d materialized, want the attempt's partition recorded", b.State, b.PartitionsMaterialized)
	}
	// The engine says so after the step that wrote the backfill's end.
	testkit.Eventually(t, 15*time.Second, "the log to say the store writes again", func() bool {
		return strings.Contains(logs.String(), "the store writes again")
	})
}

// TestOpenAPIDocumentsStoreUnwritable: every mutating operation documents
// the 503 of a database that cannot be written, with its Retry-After.
func TestOpenAPIDocumentsStoreUnwritable(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Headers map[string]any `json:"headers"`
			} `json:"responses"`
		} `json:"paths"`
	}
	getJSON(t, env.Anon(), env.URL+"/api/v1/openapi.json", &doc)
	n := 0
	for p, ops := range doc.Paths {
		for m, op := range ops {
			r, ok := op.Responses["503"]
			if m == "get" {
				continue
			}
			n++
			if !ok || r.Headers["Retry-After"] == nil {
				t.Errorf("%s %s does not document the 503 with Retry-After", m, p)
			}
		}
	}
	if n == 0 {
		t.Fatal("no mutating operation in the document")
	}
}

// TestSignInAndOutWhileTheStoreCannotWrite: while the database refuses
// writes, the sign-in page says why (503, Retry-After) instead of a generic
// error page, signing out still signs the browser out, and the banner that
// open pages ask for again follows the store: there while it fails, gone
// once it writes again.
func TestSignInAndOutWhileTheStoreCannotWrite(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	env.Store.SetFaultHold(50 * time.Millisecond)
	env.CreateUser(t, "lou", auth.RoleViewer, testkit.TestPassword)
	lou := env.Login(t, "lou", testkit.TestPassword)
	banner := func() string {
		_, b := env.GetText(t, env.Anon(), "/fault-banner")
		return b
	}
	if b := banner(); strings.Contains(b, "store-banner") {
		t.Fatalf("a banner while the store writes: %s", b)
	}
	if _, err := env.Store.RawWriter().Exec(`PRAGMA query_only = 1`); err != nil { // every write now fails as SQLITE_READONLY
		t.Fatal(err)
	}
	r := env.SessionPost(t, env.Anon(), "/login", url.Values{"name": {"lou"}, "password": {testkit.TestPassword}})
	page := readBody(t, r)
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || !strings.Contains(page, "the database cannot be written") ||
		!strings.Contains(page, `name="password"`) {
		t.Fatalf("sign-in while the store cannot write: %d Retry-After %q, want 503 on the sign-in page saying why", r.StatusCode, r.Header.Get("Retry-After"))
	}
	r = env.SessionPost(t, lou, "/logout", nil)
	r.Body.Close()
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out while the store cannot write: %d, want 303", r.StatusCode)
	}
	resp := testkit.GetNoBody(t, lou, env.URL+"/")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Fatalf("after signing out the browser still reads pages: %d", resp.StatusCode)
	}
	if b := banner(); !strings.Contains(b, "store-banner") || !strings.Contains(b, "read-only") {
		t.Fatalf("no banner while the store cannot write: %s", b)
	}
	if _, err := env.Store.RawWriter().Exec(`PRAGMA query_only = 0`); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "the banner to go once the store writes again", func() bool { return !strings.Contains(banner(), "store-banner") })
}

// TestStoreUnavailableAnswers503: while PostgreSQL is stopped, API reads
// and writes answer 503 store_unavailable with Retry-After and a message
// that says the database does not answer (no driver text), pages answer
// 503 with the same words instead of "Something went wrong", and the
// fault banner (which open pages fetch again) says the database does not
// answer since when; once it is back, the same calls answer 200 and the
// banner goes. The cluster is the test's own.
func TestStoreUnavailableAnswers503(t *testing.T) {
	t.Parallel()
	k := pgtest.NewCluster(t)
	env := testkit.New(t, testkit.Options{DB: k.URL(t)})
	viewer := env.Client(t, auth.RoleViewer)
	env.StartEngine(t, jobs.Options{LeaseTTL: time.Second}) // its heartbeats find the outage
	banner := func() string {
		_, body := testkit.Fetch(t, env.Anon(), http.MethodGet, env.URL+"/fault-banner", "")
		return body
	}
	if b := banner(); strings.Contains(b, "does not answer") {
		t.Fatalf("banner before the outage: %s", b)
	}
	if resp, raw := env.GetBody(t, "/api/v1/backfills"); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/backfills before the outage: %d %s", resp.StatusCode, raw)
	}
	k.Stop(t)
	checkAPI := func(what string, resp *http.Response, raw string) {
		t.Helper()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("%s with PostgreSQL down: %d %s, want 503", what, resp.StatusCode, raw)
		}
		if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra <= 0 {
			t.Errorf("%s: Retry-After = %q, want a number of seconds", what, resp.Header.Get("Retry-After"))
		}
		var eb struct {
			Error handlers.UserError `json:"error"`
		}
		if err := json.Unmarshal([]byte(raw), &eb); err != nil {
			t.Fatalf("%s: %v in %s", what, err, raw)
		}
		if eb.Error.Code != "store_unavailable" || !strings.Contains(eb.Error.Message, "the database does not answer") {
			t.Errorf("%s: error %+v, want code store_unavailable saying the database does not answer", what, eb.Error)
		}
		if strings.Contains(eb.Error.Message, "dial") || strings.Contains(eb.Error.Message, "127.0.0.1") {
			t.Errorf("%s: the message leaks the driver's text: %q", what, eb.Error.Message)
		}
	}
	resp, raw := env.GetBody(t, "/api/v1/backfills")
	checkAPI("GET /api/v1/backfills", resp, string(raw))
	resp = env.Post(t, "/api/v1/backfills", `{"assets":["demo.daily"],"selector":{"type":"range","start":"2025-02-01","end":"2025-02-03"},"chunk_size":1}`)
	checkAPI("POST /api/v1/backfills", resp, readBody(t, resp))
	page, body := testkit.Fetch(t, viewer, http.MethodGet, env.URL+"/backfills", "")
	if page.StatusCode != http.StatusServiceUnavailable || page.Header.Get("Retry-After") == "" ||
		!strings.Contains(body, "does not answer") || strings.Contains(body, "Something went wrong") {
		t.Errorf("GET /backfills with PostgreSQL down: %d Retry-After %q, want 503 saying the database does not answer: %s",
			page.StatusCode, page.Header.Get("Retry-After"), body)
	}
	testkit.Eventually(t, 10*time.Second, "the fault banner to say the database does not answer", func() bool {
		return strings.Contains(banner(), "The database does not answer since")
	})
	k.Start(t)
	testkit.Eventually(t, 20*time.Second, "the API to answer again", func() bool {
		resp, _ := env.GetBody(t, "/api/v1/backfills")
		return resp.StatusCode == http.StatusOK
	})
	// The banner goes at the engine's next heartbeat that succeeds (every
	// quarter of the lease TTL); in make test's race pass, on a loaded
	// machine, once took longer than 10 s.
	last := ""
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the last fault banner: %q", last)
		}
	})
	testkit.Eventually(t, 30*time.Second, "the fault banner to go", func() bool {
		last = banner()
		return !strings.Contains(last, "does not answer")
	})
	if page := testkit.GetNoBody(t, viewer, env.URL+"/backfills"); page.StatusCode != http.StatusOK {
		t.Errorf("GET /backfills after the outage: %d", page.StatusCode)
	}
}
