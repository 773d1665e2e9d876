package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/cli"
	"github.com/tessera-dev/tessera/testkit"
)

// wordsWS: a static asset whose "bad" partition fails while the file
// WORDS_FAIL exists.
const wordsWS = `
assets:
  w.cmd:
    partitions: {static: [good, bad]}
    retries: {max_attempts: 1}
    executor:
      command: ['case "$TESSERA_PARTITIONS" in *bad*) if [ -e "$WORDS_FAIL" ]; then exit 1; fi;; esac; echo "built $TESSERA_PARTITIONS"']
      shell: true
      env: {WORDS_FAIL: "%s"}
`

// wordsAPI calls the API with tok and returns the decoded object.
func wordsAPI(t *testing.T, env *testkit.Env, tok, method, path, body string, want int) map[string]any {
	t.Helper()
	resp, out := testkit.APIRequest(t, env.URL, tok, method, path, body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %v", method, path, resp.StatusCode, out)
	}
	m, _ := out.(map[string]any)
	return m
}

// wordsWait waits until backfill id is in state.
func wordsWait(t *testing.T, env *testkit.Env, tok, id, state string) {
	t.Helper()
	testkit.Eventually(t, 60*time.Second, "backfill "+id+" to be "+state, func() bool {
		return wordsAPI(t, env, tok, "GET", "/api/v1/backfills/"+id, "", http.StatusOK)["state"] == state
	})
}

// TestBrowserWordsNoIDsInTitles: a Retry failed child of an untitled
// backfill is named after its parent's name ("Retry failed: Backfill of
// w.cmd"), never its id ("Retry failed of bf_01m…"), in its title, its
// breadcrumb, the list, the API and the CLI; the run page's title and
// breadcrumb name the chunk and the backfill, its run id only in the
// details; a chunk tile without a link can be reached by the keyboard and
// says what it is; plurals are right ("1 partition in 1 chunk").
func TestBrowserWordsNoIDsInTitles(t *testing.T) {
	t.Parallel()
	env, _ := testkit.WithFlagFile(t, wordsWS)
	tok := env.Token(t, auth.RoleOperator)
	parent := wordsAPI(t, env, tok, "POST", "/api/v1/backfills", `{"assets":["w.cmd"],"selector":{"type":"range","start":"good","end":"bad"},"chunk_size":1,"max_concurrent_runs":1}`, http.StatusCreated)["id"].(string)
	wordsWait(t, env, tok, parent, "FAILED")
	child := wordsAPI(t, env, tok, "POST", "/api/v1/backfills/"+parent+"/retry-failed", `{"retry_request_id":"w1"}`, http.StatusCreated)["id"].(string)
	wordsWait(t, env, tok, child, "FAILED")

	// The API and the CLI name the child after its parent's name.
	b := wordsAPI(t, env, tok, "GET", "/api/v1/backfills/"+child, "", http.StatusOK)
	if title, _ := b["title"].(string); title != "Retry failed: Backfill of w.cmd" {
		t.Errorf("API title of the retry %q, want Retry failed: Backfill of w.cmd", title)
	}
	var out, errb bytes.Buffer
	if code := cli.Execute([]string{"backfill", "list", "--server", env.URL, "--token", tok}, &out, &errb); code != 0 {
		t.Fatalf("backfill list: %d %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "Retry failed: Backfill of w.cmd") || strings.Contains(out.String(), "Retry failed of") {
		t.Errorf("backfill list:\n%s", out.String())
	}

	ctx := env.SignedInBrowser(t, auth.RoleViewer)
	for _, w := range []int64{1280, 390} {
		h := map[int64]int64{1280: 800, 390: 844}[w]
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, h), chromedp.Navigate(env.URL+"/backfills/"+child)); err != nil {
			t.Fatal(err)
		}
		testkit.WaitJS(t, ctx, `!!document.querySelector('main h1')`, 30*time.Second, "the backfill page")
		title := testkit.JS(t, ctx, `document.querySelector('main h1').innerText + " | " + document.title`)
		crumbs := testkit.JS(t, ctx, `document.querySelector('[data-testid="crumbs"]').innerText`)
		if !strings.Contains(title, "Retry failed: Backfill of w.cmd") || strings.Contains(title, "bf_") {
			t.Errorf("%d px: the retry's title %q names an id, or not its parent", w, title)
		}
		if strings.Contains(crumbs, "bf_") || !strings.Contains(crumbs, "Backfill of w.cmd") {
			t.Errorf("%d px: the retry's breadcrumb %q names an id, or not its parent", w, crumbs)
		}
		if got := testkit.JS(t, ctx, `document.querySelector('[data-testid="selection"]').innerText`); got != "the failed and upstream-failed partitions of Backfill of w.cmd" {
			t.Errorf("%d px: selection %q names its parent's id, or not its name", w, got)
		}
		if got := testkit.JS(t, ctx, `document.querySelector('[data-testid="parent-link"]').innerText`); got != "Backfill of w.cmd" {
			t.Errorf("%d px: Retry of %q, want the parent's name", w, got)
		}
		if got := testkit.JS(t, ctx, `(document.querySelector('[data-testid="outcome-grid-caption"]')||{innerText:""}).innerText`); got != "1 partition in 1 chunk" {
			t.Errorf("%d px: outcome caption %q, want 1 partition in 1 chunk", w, got)
		}
		if got := testkit.JS(t, ctx, `document.querySelector('[data-testid="chunk-filter"] .muted').innerText`); got != "1 of 1 chunk planned" {
			t.Errorf("%d px: chunk filter says %q, want 1 of 1 chunk planned", w, got)
		}
		// A chunk tile that is not a link is focusable and says what it is.
		testkit.JS(t, ctx, `(() => { const s = document.querySelector('span[data-testid="outcome-chunk"]'); if (s) s.focus(); return "" })()`)
		if got := testkit.JS(t, ctx, `(() => { const s = document.querySelector('span[data-testid="outcome-chunk"]'); return s ? String(document.activeElement === s && s.getAttribute("aria-label") === s.title && s.title !== "") : "none" })()`); got != "true" && got != "none" {
			t.Errorf("%d px: a chunk tile without a link cannot be reached by the keyboard (%s)", w, got)
		}
		testkit.Screenshot(t, ctx, fmt.Sprintf("retry-backfill-named-%d", w))

		// The run page: title and breadcrumb without ids; the id in the details.
		runHref := testkit.JS(t, ctx, `(document.querySelector('a[href^="/runs/"]')||{getAttribute:()=>""}).getAttribute("href")`)
		if err := chromedp.Do(ctx, chromedp.Navigate(env.URL+runHref)); err != nil {
			t.Fatal(err)
		}
		testkit.WaitJS(t, ctx, `!!document.querySelector('[data-testid="run-title"]')`, 30*time.Second, "the run page")
		rt := testkit.JS(t, ctx, `document.querySelector('[data-testid="run-title"]').innerText + " | " + document.querySelector('.crumbs').innerText + " | " + document.title`)
		runID := testkit.JS(t, ctx, `document.querySelector('[data-testid="run-id"]').innerText`)
		if runID == "" || strings.Contains(rt, runID) || strings.Contains(rt, "bf_") || !strings.Contains(rt, "Chunk 0 of Retry failed: Backfill of w.cmd") {
			t.Errorf("%d px: run page title and breadcrumb %q (run id %q)", w, rt, runID)
		}
		testkit.Screenshot(t, ctx, fmt.Sprintf("run-named-%d", w))
	}
}
