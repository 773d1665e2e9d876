package handlers_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// Helpers shared by this package's tests: a page fetched and parsed, a
// response's body read, an API call decoded, text squashed.

// get fetches path from the test server and returns status and document.
func get(t *testing.T, env *testkit.Env, path string) (int, *goquery.Document) {
	t.Helper()
	resp, err := env.Get(path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, pgDoc(t, resp)
}

// seededEnv is a server on the seeded demo, for a test that renders its
// pages request after request (too slow for the race pass; parallel).
func seededEnv(t *testing.T) *testkit.Env {
	t.Helper()
	testkit.SkipInRacePass(t)
	t.Parallel()
	return testkit.New(t, testkit.Options{Seed: true})
}

// pgWorkspace is pgEnv's workspace: a daily asset, one that always fails
// and a static one whose command runs 3 s, one attempt each.
var pgWorkspace = `defaults:
  retries: {max_attempts: 1}
` + testkit.Assets(
	testkit.Asset("t.daily", testkit.Daily, "code_version: v1", "executor: {demo: {duration: 5ms}}"),
	testkit.Asset("t.flaky", testkit.Daily, "code_version: v1", "executor: {demo: {duration: 5ms, failure_rate: 1}}"),
	testkit.Asset("t.cmd", "{static: [x]}", "code_version: v1", testkit.Shell(`echo "tail me $TESSERA_PARTITIONS"; sleep 3`)),
)

// pgEnv starts a server with an engine; run starts its controller (without
// it, backfills stay PENDING, which makes states deterministic).
func pgEnv(t *testing.T, run bool) (*testkit.Env, *jobs.Engine) {
	t.Helper()
	return pgEnvWith(t, pgWorkspace, run)
}

// pgEnvWith is pgEnv with another workspace.
func pgEnvWith(t *testing.T, workspace string, run bool) (*testkit.Env, *jobs.Engine) {
	t.Helper()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: workspace})
	if env.Handler.Engine != nil { // testkit may start one already
		return env, env.Handler.Engine
	}
	eng := env.NewEngine(t, nil, jobs.Options{})
	if run {
		testkit.RunEngine(t, eng)
	}
	return env, eng
}

// pgCreateBF creates a backfill of asset's range [start, end] in chunks of
// chunk partitions.
func pgCreateBF(t *testing.T, eng *jobs.Engine, asset, start, end string, chunk int64) db.Backfill {
	t.Helper()
	return testkit.CreateBackfill(t, eng, jobs.Request{Assets: []string{asset}, ChunkSize: chunk, MaxConcurrentRuns: 2,
		Selector: jobs.Selector{Type: "range", Start: start, End: end}, Title: "test " + asset})
}

// pgGet fetches path as client c and returns status and parsed document.
func pgGet(t *testing.T, env *testkit.Env, c *http.Client, path string) (int, *goquery.Document) {
	t.Helper()
	resp, err := c.Get(env.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, pgDoc(t, resp)
}

// pgDoc parses resp's body (the caller closes it).
func pgDoc(t *testing.T, resp *http.Response) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// apiCall sends a JSON API request with token tok and returns the status and
// the answer's JSON object (nil when the body is empty).
func apiCall(t *testing.T, env *testkit.Env, tok, method, path, body string, hdr ...string) (int, map[string]any) {
	t.Helper()
	resp, out := testkit.APIRequest(t, env.URL, tok, method, path, body, append([]string{"Content-Type", "application/json"}, hdr...)...)
	m, ok := out.(map[string]any)
	if !ok && out != nil {
		t.Fatalf("%s %s: %d answered %v, not a JSON object", method, path, resp.StatusCode, out)
	}
	return resp.StatusCode, m
}

// decode reads resp's body as JSON into v.
func decode(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// squash folds runs of white space in s to one space.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// text is the selection's text with its white space folded.
func text(s *goquery.Selection) string { return strings.Join(strings.Fields(s.Text()), " ") }

// readBody reads resp's body to the end, closes it and returns it as text.
func readBody(t testing.TB, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read the body: %v", err)
	}
	return string(b)
}

// okPage fetches path as client c and returns the parsed page; t fails
// unless the answer is 200.
func okPage(t testing.TB, env *testkit.Env, c *http.Client, path string) *goquery.Document {
	t.Helper()
	status, body := okText(t, env, c, path)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse %s (%d): %v", path, status, err)
	}
	return doc
}

// okText fetches path as client c and returns status and body; t fails
// unless the status is 200.
func okText(t testing.TB, env *testkit.Env, c *http.Client, path string) (int, string) {
	t.Helper()
	status, body := env.GetText(t, c, path)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %.300s", path, status, body)
	}
	return status, body
}

// okJSON fetches path as client c and decodes its JSON into v; t fails
// unless the answer is 200.
func okJSON(t testing.TB, env *testkit.Env, c *http.Client, path string, v any) {
	t.Helper()
	_, body := okText(t, env, c, path)
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v in %.300s", path, err, body)
	}
}

// cancelAtEnd terminates backfill id when the test ends, so that no attempt
// outlives it (with a context of its own: the test's has ended by then).
func cancelAtEnd(t testing.TB, eng *jobs.Engine, id string) {
	t.Cleanup(func() { _, _ = eng.Transition(context.Background(), id, jobs.ActCancel, 0, true, "tester") })
}

// firstRun waits (15 s at most, what says for what) until backfill id has a
// run, in state unless state is "", and returns it.
func firstRun(t testing.TB, env *testkit.Env, id, state, what string) db.Run {
	t.Helper()
	var run db.Run
	testkit.Eventually(t, 15*time.Second, what, func() bool {
		runs, _ := env.Store.Runs(t.Context(), id, nil, -1, 1)
		if len(runs) == 1 && (state == "" || runs[0].State == state) {
			run = runs[0]
			return true
		}
		return false
	})
	return run
}

// pgWaitState waits (20 s at most) until backfill id is in one of states.
func pgWaitState(t testing.TB, env *testkit.Env, id string, states ...string) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, "backfill "+id+" to be "+strings.Join(states, " or "), func() bool {
		b, err := env.Store.Backfill(t.Context(), id)
		return err == nil && slices.Contains(states, b.State)
	})
}
