package handlers_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/testkit/pgtest"
)

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
