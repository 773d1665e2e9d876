package handlers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/testkit"
)

// The partition page writes an instance's duration as every other page does
// ("1 min 0 s"), not in Go's notation ("1m0s").
func TestPartitionHistoryDurationReadsLikeOtherPages(t *testing.T) {
	t.Parallel()
	env := statusEnvAt(t, T0.Add(time.Hour))
	mat(t, env, "s.static", "a", "v2", T0) // started a minute before T0
	_, doc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/assets/s.static/partitions/a")
	got := strings.TrimSpace(doc.Find(`[data-testid="instance"]`).First().Children().Eq(5).Text())
	if got != "1 min 0 s" {
		t.Errorf("instance duration %q, want 1 min 0 s", got)
	}
}

// TestPartitionKeysRoundTripInURLs: every key reaches its own page, history
// and taint through the links Tessera makes, whatever it contains ("/",
// "%", spaces, markup), and "." or ".." are refused as keys (a URL path
// cannot carry them).
func TestPartitionKeysRoundTripInURLs(t *testing.T) {
	t.Parallel()
	env := testkit.WithAssets(t,
		testkit.Asset("d.feeds", "{dynamic: feeds}"),
	)
	keys := []string{"a/b", "a%2Fb", "p q", "p%20q", "50%", "<b>x</b>", "a?b#c"}
	body, _ := json.Marshal(map[string]any{"keys": keys})
	if r := env.Post(t, "/api/v1/assets/d.feeds/partition-keys", string(body)); r.StatusCode >= 300 {
		t.Fatalf("add keys: %d", r.StatusCode)
	}
	var items []string
	for _, k := range keys {
		kj, _ := json.Marshal(k)
		items = append(items, fmt.Sprintf(`{"asset":"d.feeds","partition":%s,"status":"materialized"}`, kj))
	}
	if r := env.Post(t, "/api/v1/materializations", "["+strings.Join(items, ",")+"]"); r.StatusCode != 201 {
		t.Fatalf("report: %d", r.StatusCode)
	}
	c := env.Client(t, auth.RoleViewer)
	tok := env.Token(t, auth.RoleViewer)
	for _, k := range keys {
		href := handlers.PartitionHref("d.feeds", k)
		status, doc := pgGet(t, env, c, href)
		if got := doc.Find(`[data-testid="partition-key"]`).Text(); status != http.StatusOK || got != k {
			t.Errorf("%q: page %s answered %d for %q", k, href, status, got)
		}
		code, h := apiCall(t, env, tok, "GET", "/api/v1"+href+"/history", "")
		if code != http.StatusOK || h["partition"] != k {
			t.Errorf("%q: history answered %d for %v", k, code, h["partition"])
		}
	}
	// Tainting "a%2Fb" taints that partition, not "a/b".
	if r := env.Post(t, "/api/v1"+handlers.PartitionHref("d.feeds", "a%2Fb")+"/taint", `{"reason":"bad"}`); r.StatusCode >= 300 {
		t.Fatalf("taint: %d", r.StatusCode)
	}
	for k, want := range map[string]bool{"a%2Fb": true, "a/b": false} {
		_, doc := pgGet(t, env, c, handlers.PartitionHref("d.feeds", k))
		if got := doc.Find(`[data-testid="tainted"]`).Length() == 1; got != want {
			t.Errorf("%q tainted = %v, want %v", k, got, want)
		}
	}
	for _, k := range []string{".", ".."} {
		kj, _ := json.Marshal(k)
		r := env.Post(t, "/api/v1/assets/d.feeds/partition-keys", `{"keys":[`+string(kj)+`]}`)
		if r.StatusCode != http.StatusBadRequest {
			t.Errorf("key %q: %d, want 400", k, r.StatusCode)
		}
	}
}

// A partition page offers operators "Rebuild…": the new-backfill form with
// that partition selected, showing its preview on load; nothing launches
// until Launch. Viewers get no Rebuild… (and no Launch on the form).
func TestPartitionRebuildOpensThePrefilledForm(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	const partition = "/assets/t.daily/partitions/2025-01-05"
	viewer, op := env.Client(t, auth.RoleViewer), env.Client(t, auth.RoleOperator)
	if _, doc := pgGet(t, env, viewer, partition); doc.Find(`[data-testid="rebuild"]`).Length() != 0 {
		t.Error("a viewer is offered Rebuild…")
	}
	_, doc := pgGet(t, env, op, partition)
	link := doc.Find(`[data-testid="rebuild"]`)
	if link.Length() != 1 || link.Text() != "Rebuild…" {
		t.Fatalf("an operator's partition page has %d Rebuild… (%q)", link.Length(), link.Text())
	}
	href := link.AttrOr("href", "")
	u, err := url.Parse(href)
	if err != nil || u.Path != "/backfills/new" {
		t.Fatalf("Rebuild… leads to %q", href)
	}
	if q := u.Query(); q.Get("asset") != "t.daily" || q.Get("selector") != "explicit" || q.Get("keys") != "2025-01-05" {
		t.Errorf("Rebuild… preselects %v", q)
	}
	status, form := pgGet(t, env, op, href)
	if status != http.StatusOK {
		t.Fatalf("the form: %d", status)
	}
	if _, ok := form.Find(`[data-testid="selector-explicit"]`).Attr("checked"); !ok {
		t.Error("the form does not tick the explicit list")
	}
	if _, ok := form.Find(`input[name="asset"][value="t.daily"]`).Attr("checked"); !ok {
		t.Error("the form does not tick t.daily")
	}
	if keys := form.Find(`[data-testid="keys"]`).Text(); keys != "2025-01-05" {
		t.Errorf("the form's keys %q", keys)
	}
	if n := form.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n != "1" {
		t.Errorf("the preview counts %q partitions, want 1", n)
	}
	if form.Find(`[data-testid="launch"]`).Length() != 1 {
		t.Error("no Launch for an operator")
	}
	// Opening the form launched nothing.
	if bs, err := env.Store.Backfills(t.Context(), nil, "", 0, 10); err != nil || len(bs) != 0 {
		t.Errorf("%d backfills after opening the form (%v)", len(bs), err)
	}
	if _, form = pgGet(t, env, viewer, href); form.Find(`[data-testid="launch"]`).Length() != 0 {
		t.Error("a viewer who types the address gets a Launch button")
	}
	// The grid's selection says the same word.
	if _, doc = pgGet(t, env, op, "/assets/t.daily?from=2025-01-01&to=2025-01-31"); doc.Find(`[data-testid="backfill-selection"]`).Text() != "Rebuild…" {
		t.Errorf("the grid selection's button reads %q", doc.Find(`[data-testid="backfill-selection"]`).Text())
	}
}

// The partition page's last materialization and last attempt link their
// run to its page, as the history below does; a run id a pipeline reported
// (no run page) stays text.
func TestPartitionLastRunLinksToItsPage(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, true)
	bf := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-01", 1)
	pgWaitState(t, env, bf.ID, db.BackfillSucceeded)
	c := env.Client(t, auth.RoleViewer)
	_, doc := pgGet(t, env, c, "/assets/t.daily/partitions/2025-01-01")
	runHref := doc.Find(`[data-testid="instance-run"]`).First().AttrOr("href", "")
	if runHref == "" {
		t.Fatal("the history links no run: the test needs a partition a backfill built")
	}
	for _, sec := range []string{"last-materialization", "last-attempt"} {
		if got := doc.Find(`[data-testid="`+sec+`"] a[data-testid="kv-link"]`).AttrOr("href", ""); got != runHref {
			t.Errorf("%s links its run to %q, want %q (the history's link)", sec, got, runHref)
		}
	}
	if r := env.Post(t, "/api/v1/materializations", `{"asset": "t.daily", "partition": "2025-01-02", "status": "failed", "run_id": "airflow-1"}`); r.StatusCode != 201 {
		t.Fatalf("report: %d", r.StatusCode)
	}
	_, doc = pgGet(t, env, c, "/assets/t.daily/partitions/2025-01-02")
	if n := doc.Find(`[data-testid="last-attempt"] a`).Length(); n != 0 || !strings.Contains(text(doc.Find(`[data-testid="last-attempt"]`)), "airflow-1") {
		t.Errorf("a reported run: %d links in %q, want its id as text", n, text(doc.Find(`[data-testid="last-attempt"]`)))
	}
}
