package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/tessera-dev/tessera/auth"
)

// TestNewBackfillStatusChoice: the new-backfill form's "Only partitions
// that are" choice selects any set of the API's filter statuses (missing,
// failed, stale, tainted): the preview counts them, the launch creates a
// filter backfill of them, the address prefills them, and an empty or
// unknown status is refused next to the statuses with a 400 that writes
// nothing.
func TestNewBackfillStatusChoice(t *testing.T) {
	env, _ := pgEnv(t, false)
	c := env.Client(t, auth.RoleOperator)
	// 01 materialized, 02 failed, 03 materialized then tainted, 04 and 05 missing.
	r := env.Post(t, "/api/v1/materializations", `[{"asset":"t.daily","partition":"2025-01-01","status":"materialized"},
		{"asset":"t.daily","partition":"2025-01-02","status":"failed","error":"boom"},
		{"asset":"t.daily","partition":"2025-01-03","status":"materialized"}]`)
	if r.StatusCode != 201 {
		t.Fatalf("report: %d", r.StatusCode)
	}
	if r := env.Post(t, "/api/v1/assets/t.daily/partitions/2025-01-03/taint", `{"reason":"bad rows"}`); r.StatusCode != 200 {
		t.Fatalf("taint: %d", r.StatusCode)
	}
	form := func(statuses ...string) url.Values {
		return url.Values{"asset": {"t.daily"}, "selector": {"statuses"}, "status": statuses, "start": {"2025-01-01"}, "end": {"2025-01-05"},
			"chunk_size": {"1"}, "max_concurrent_runs": {"1"}}
	}
	for _, tc := range []struct {
		statuses []string
		want     string
	}{
		{[]string{"failed"}, "1"},
		{[]string{"missing"}, "2"},
		{[]string{"tainted"}, "1"},
		{[]string{"tainted", "failed"}, "2"},
		{[]string{"missing", "failed", "tainted"}, "4"},
	} {
		resp := env.SessionPost(t, c, "/backfills/preview", form(tc.statuses...))
		doc := pgDoc(t, resp)
		if n := doc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); resp.StatusCode != 200 || n != tc.want {
			t.Errorf("only %v: status %d, preview counts %q partitions, want %s (%s)", tc.statuses, resp.StatusCode, n, tc.want, doc.Find(`[data-testid="preview-error"]`).Text())
		}
		for _, st := range []string{"missing", "failed", "stale", "tainted"} {
			ticked := doc.Find(`input[data-testid="status-` + st + `"]`).Is("[checked]")
			if want := slices.Contains(tc.statuses, st); ticked != want {
				t.Errorf("only %v: status %s ticked %v, want %v", tc.statuses, st, ticked, want)
			}
		}
		if !doc.Find(`input[data-testid="selector-statuses"]`).Is("[checked]") {
			t.Errorf("only %v: the choice 'Only partitions that are' is not ticked", tc.statuses)
		}
	}
	// The live preview (htmx) answers the panel alone with the same count.
	live := form("failed", "tainted")
	live.Set("_csrf", env.CSRF(t, c))
	req, _ := http.NewRequest(http.MethodPost, env.URL+"/backfills/preview", strings.NewReader(live.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("HX-Request", "true")
	req.Header.Set("X-CSRF-Token", env.CSRF(t, c))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	doc := pgDoc(t, resp)
	if n := doc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n != "2" || doc.Find("form").Length() != 0 {
		t.Fatalf("live preview of failed and tainted: %q partitions, %d forms", n, doc.Find("form").Length())
	}

	// The address prefills the statuses (status= alone means this choice).
	for _, q := range []string{"?asset=t.daily&selector=statuses&status=failed&status=tainted&start=2025-01-01&end=2025-01-05",
		"?asset=t.daily&status=tainted&status=failed&start=2025-01-01&end=2025-01-05"} {
		_, doc := pgGet(t, env, c, "/backfills/new"+q)
		if !doc.Find(`input[data-testid="selector-statuses"]`).Is("[checked]") || !doc.Find(`input[data-testid="status-failed"]`).Is("[checked]") ||
			!doc.Find(`input[data-testid="status-tainted"]`).Is("[checked]") || doc.Find(`input[data-testid="status-missing"]`).Is("[checked]") {
			t.Errorf("%s: statuses not prefilled", q)
		}
		if n := doc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n != "2" {
			t.Errorf("%s: preview on load counts %q, want 2", q, n)
		}
	}

	// Launch: a filter backfill of exactly the failed and tainted days.
	launch := form("failed", "tainted")
	launch.Set("idempotency_key", "k-statuses")
	if resp := env.SessionPost(t, c, "/backfills", launch); resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("launch: %d", resp.StatusCode)
	}
	bfs, err := env.Store.Backfills(context.Background(), nil, "", 0, 10)
	if err != nil || len(bfs) != 1 || bfs[0].TotalPartitions != 2 || !strings.Contains(bfs[0].Selector, `"statuses":["failed","tainted"]`) {
		t.Fatalf("backfills %+v %v", bfs, err)
	}

	// Refused, next to the statuses, with a 4xx, writing nothing.
	for _, tc := range []struct {
		statuses []string
		msg      []string
	}{
		{nil, []string{"tick at least one status", "Only partitions that are", "tainted (marked invalid by a user)"}},
		{[]string{"failed", "taintd"}, []string{`unknown status "taintd"`, `did you mean "tainted"`, "missing (never materialized)"}},
		{[]string{"materialized"}, []string{`unknown status "materialized"`}},
	} {
		for _, path := range []string{"/backfills", "/backfills/preview"} {
			resp := env.SessionPost(t, c, path, form(tc.statuses...))
			doc := pgDoc(t, resp)
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%s with statuses %v: status %d, want 400", path, tc.statuses, resp.StatusCode)
			}
			msg := doc.Find(`[data-testid="error-status"]`).Text()
			for _, w := range tc.msg {
				if !strings.Contains(msg, w) {
					t.Errorf("%s with statuses %v: message %q lacks %q", path, tc.statuses, msg, w)
				}
			}
		}
	}
	if n := pgCountBackfills(t, env); n != 1 {
		t.Fatalf("refused statuses created backfills: %d in all", n)
	}
	// The existing choices keep their values (links elsewhere use them).
	for _, v := range []string{"range", "missing_failed", "stale", "missing_stale", "gaps", "explicit"} {
		_, doc := pgGet(t, env, c, "/backfills/new?selector="+v)
		if !doc.Find(`input[data-testid="selector-`+v+`"]`).Is("[checked]") || doc.Find(`[data-testid="error-selector"]`).Length() != 0 {
			t.Errorf("selector=%s is no longer a choice of the form", v)
		}
	}
}

// TestFillGapsPreviewSaysGapsOnce: the "Fill gaps" preview heads its gap
// list once ("Gaps up to the watermark …"); it said "Gaps" twice, a heading
// of the preview above the list's own.
func TestFillGapsPreviewSaysGapsOnce(t *testing.T) {
	env, _ := pgEnv(t, false)
	c := env.Client(t, auth.RoleOperator)
	r := env.Post(t, "/api/v1/materializations", `[{"asset":"t.daily","partition":"2025-01-01","status":"materialized"},
		{"asset":"t.daily","partition":"2025-01-04","status":"materialized"}]`)
	if r.StatusCode != 201 {
		t.Fatalf("report: %d", r.StatusCode)
	}
	if r := env.Post(t, "/api/v1/assets/t.daily/watermark", `{"partition":"2025-01-04"}`); r.StatusCode != 200 {
		t.Fatalf("watermark: %d", r.StatusCode)
	}
	// As the gaps page's "Backfill these gaps" opens it.
	_, gp := pgGet(t, env, c, "/assets/t.daily/gaps")
	href, ok := gp.Find(`[data-testid="backfill-gaps"]`).Attr("href")
	if !ok {
		t.Fatal("no Backfill these gaps link")
	}
	_, doc := pgGet(t, env, c, href)
	pv := doc.Find(`[data-testid="preview-gaps"]`)
	if pv.Length() != 1 {
		t.Fatalf("no gap list in the preview: %s", doc.Find(`[data-testid="preview"]`).Text())
	}
	var heads []string
	doc.Find(`[data-testid="preview"]`).Find("h1, h2, h3, h4").Each(func(_ int, s *goquery.Selection) {
		if strings.Contains(strings.ToLower(s.Text()), "gaps") {
			heads = append(heads, strings.Join(strings.Fields(s.Text()), " "))
		}
	})
	if len(heads) != 1 || !strings.HasPrefix(heads[0], "Gaps up to the watermark 2025-01-04") {
		t.Fatalf("gap headings in the preview %q, want one: Gaps up to the watermark 2025-01-04", heads)
	}
	if n := doc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n != "2" {
		t.Fatalf("fill gaps preview counts %q, want 2", n)
	}
}
