package handlers_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/handlers"
)

// TestNewBackfillUnknownAsset: an asset the workspace does not declare, in
// the address or a posted form, is reported next to the assets and in the
// preview (with the closest name, and where to find the assets) instead of
// being dropped and answered with "assets is required".
func TestNewBackfillUnknownAsset(t *testing.T) {
	env, _ := pgEnv(t, false)
	c := env.Client(t, handlers.RoleOperator)

	check := func(where, msg, name, suggestion string) {
		t.Helper()
		if !strings.Contains(msg, `unknown asset "`+name+`"`) {
			t.Errorf("%s: %q does not say %s is unknown", where, msg, name)
		}
		if suggestion != "" && !strings.Contains(msg, `did you mean "`+suggestion+`"`) {
			t.Errorf("%s: %q does not suggest %s", where, msg, suggestion)
		}
		if suggestion == "" && strings.Contains(msg, "did you mean") {
			t.Errorf("%s: %q suggests a name far from %s", where, msg, name)
		}
		if !strings.Contains(msg, "/api/v1/assets") || !strings.Contains(msg, "asset list") {
			t.Errorf("%s: %q does not say how to find the assets", where, msg)
		}
		if strings.Contains(msg, "required") {
			t.Errorf("%s: %q still says assets are required", where, msg)
		}
	}
	for _, tc := range []struct{ name, suggestion string }{{"nosuch.asset", ""}, {"t.dialy", "t.daily"}} {
		_, doc := pgGet(t, env, c, "/backfills/new?asset="+url.QueryEscape(tc.name)+"&start=2025-01-01&end=2025-01-03")
		check("GET field", doc.Find(`[data-testid="error-assets"]`).Text(), tc.name, tc.suggestion)
		pe := doc.Find(`[data-testid="preview-error"]`)
		check("GET preview", pe.Text(), tc.name, tc.suggestion)
		if f := pe.AttrOr("data-field", ""); f != "assets" {
			t.Errorf("GET preview error on field %q, want assets", f)
		}
		form := url.Values{"asset": {tc.name}, "selector": {"range"}, "start": {"2025-01-01"}, "end": {"2025-01-03"}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}}
		for _, path := range []string{"/backfills/preview", "/backfills"} {
			resp := env.SessionPost(t, c, path, form)
			if resp.StatusCode != 400 {
				t.Errorf("POST %s: status %d, want 400", path, resp.StatusCode)
			}
			check("POST "+path, pgDoc(t, resp).Find(`[data-testid="error-assets"]`).Text(), tc.name, tc.suggestion)
		}
	}
	// A known asset beside an unknown one: still reported, not previewed alone.
	_, doc := pgGet(t, env, c, "/backfills/new?asset=t.daily&asset=nosuch.asset&start=2025-01-01&end=2025-01-03")
	check("GET with a known asset", doc.Find(`[data-testid="preview-error"]`).Text(), "nosuch.asset", "")
	if doc.Find(`[data-testid="asset-t.daily"][checked]`).Length() != 1 {
		t.Errorf("the known asset is not ticked")
	}
	if n := pgCountBackfills(t, env); n != 0 {
		t.Fatalf("%d backfills created", n)
	}
}

// TestNewBackfillUnknownSelector: a selection the form does not offer, in
// the address, is reported next to the choices (with the ones there are)
// and the default is ticked and previewed; a posted one is refused with the
// same list, the default ticked.
func TestNewBackfillUnknownSelector(t *testing.T) {
	env, _ := pgEnv(t, false)
	c := env.Client(t, handlers.RoleOperator)
	choices := []string{"range", "missing_failed", "stale", "missing_stale", "gaps", "explicit"}
	listsChoices := func(where, msg string) {
		t.Helper()
		for _, v := range choices {
			if !strings.Contains(msg, v+" (") {
				t.Errorf("%s: %q does not list %s", where, msg, v)
			}
		}
	}
	ticked := func(where string, doc *goquery.Document) {
		t.Helper()
		sel := doc.Find(`input[name="selector"][checked]`)
		if sel.Length() != 1 || sel.AttrOr("value", "") != "range" {
			t.Errorf("%s: %d selections ticked (%q), want range alone", where, sel.Length(), sel.AttrOr("value", ""))
		}
	}

	_, doc := pgGet(t, env, c, "/backfills/new?selector=bogus")
	msg := doc.Find(`[data-testid="error-selector"]`).Text()
	if !strings.Contains(msg, `unknown selection "bogus"`) || !strings.Contains(msg, "Range is ticked instead") {
		t.Errorf("GET: selector message %q", msg)
	}
	listsChoices("GET", msg)
	ticked("GET", doc)

	// With an asset, the preview is the ticked default's.
	_, doc = pgGet(t, env, c, "/backfills/new?asset=t.daily&selector=stael&start=2025-01-01&end=2025-01-03")
	if msg := doc.Find(`[data-testid="error-selector"]`).Text(); !strings.Contains(msg, `did you mean "stale"`) {
		t.Errorf("GET near a selection: %q", msg)
	}
	ticked("GET with an asset", doc)
	if n := doc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n != "3" {
		t.Errorf("GET with an asset: the preview counts %q partitions, want the range's 3 (%s)", n, doc.Find(`[data-testid="preview-error"]`).Text())
	}

	form := url.Values{"asset": {"t.daily"}, "selector": {"bogus"}, "start": {"2025-01-01"}, "end": {"2025-01-03"}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}}
	resp := env.SessionPost(t, c, "/backfills/preview", form)
	doc2 := pgDoc(t, resp)
	if resp.StatusCode != 400 {
		t.Errorf("POST: status %d", resp.StatusCode)
	}
	msg = doc2.Find(`[data-testid="error-selector"]`).Text()
	if !strings.Contains(msg, `unknown selection "bogus"`) {
		t.Errorf("POST: selector message %q", msg)
	}
	listsChoices("POST", msg)
	ticked("POST", doc2)
}
