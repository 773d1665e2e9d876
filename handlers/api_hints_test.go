package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// Every 404 of the API says what was not found and how to find the valid
// ids (the store's own text, `backfill "bf_nope": not found`, said neither).
func TestAPINotFoundSaysWhereToLook(t *testing.T) {
	env, tok := apiBFEnv(t)
	admin := env.AdminToken()
	const backfills = "list backfills with GET /api/v1/backfills"
	cases := []struct {
		method, path, tok string
		want              []string
	}{
		{"GET", "/api/v1/backfills/bf_nope", tok, []string{`backfill "bf_nope" not found`, backfills}},
		{"GET", "/api/v1/backfills/bf_nope/chunks", tok, []string{`backfill "bf_nope" not found`, backfills}},
		{"GET", "/api/v1/backfills/bf_nope/events", tok, []string{`backfill "bf_nope" not found`, backfills}},
		{"POST", "/api/v1/backfills/bf_nope/pause", tok, []string{`backfill "bf_nope" not found`, backfills}},
		{"POST", "/api/v1/backfills/bf_nope/resume", tok, []string{`backfill "bf_nope" not found`, backfills}},
		{"POST", "/api/v1/backfills/bf_nope/cancel", tok, []string{`backfill "bf_nope" not found`, backfills}},
		{"POST", "/api/v1/backfills/bf_nope/retry-failed", tok, []string{`backfill "bf_nope" not found`, backfills}},
		{"GET", "/api/v1/runs/run_nope", tok, []string{`run "run_nope" not found`, "GET /api/v1/backfills/{id}/chunks", backfills}},
		{"POST", "/api/v1/runs/run_nope/complete", tok, []string{`run "run_nope" not found`, "GET /api/v1/backfills/{id}/chunks"}},
		{"GET", "/api/v1/assets/nope/partitions", tok, []string{`asset "nope"`, "GET /api/v1/assets lists the declared assets"}},
		{"GET", "/api/v1/assets/nope/staleness", tok, []string{`asset "nope"`, "GET /api/v1/assets lists the declared assets"}},
		{"GET", "/api/v1/assets/nope/watermark", tok, []string{`asset "nope"`, "GET /api/v1/assets lists the declared assets"}},
		{"GET", "/api/v1/assets/nope/gaps", tok, []string{`asset "nope"`, "GET /api/v1/assets lists the declared assets"}},
		{"GET", "/api/v1/assets/nope/partitions/2025-01-01/history", tok, []string{`asset "nope"`, "GET /api/v1/assets lists the declared assets"}},
		{"GET", "/api/v1/assets/a.daily/partitions/1999-01-01/history", tok, []string{`"1999-01-01"`, "GET /api/v1/assets/a.daily/partitions lists its partitions"}},
		{"POST", "/api/v1/assets/a.daily/partitions/1999-01-01/taint", admin, []string{`"1999-01-01"`, "GET /api/v1/assets/a.daily/partitions lists its partitions"}},
		{"GET", "/api/v1/assets/a.daily/watermark", tok, []string{"has no watermark", "/api/v1/assets/a.daily/watermark"}},
		{"POST", "/api/v1/users/999", admin, []string{`no user with id "999"`, "GET /api/v1/users lists the accounts"}},
		{"POST", "/api/v1/users/bob", admin, []string{`no user with id "bob"`, "GET /api/v1/users lists the accounts"}},
		{"GET", "/api/v1/tokens?user=nobody", admin, []string{`no user "nobody"`, "GET /api/v1/users lists the accounts"}},
		{"POST", "/api/v1/tokens/999/revoke", tok, []string{"no token 999", "GET /api/v1/tokens lists your tokens"}},
		{"POST", "/api/v1/tokens/x/revoke", tok, []string{`no token "x"`, "GET /api/v1/tokens lists your tokens"}},
		{"GET", "/api/v1/nope", tok, []string{"no API endpoint GET /api/v1/nope", "GET /api/v1/openapi.json"}},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			body := ""
			if strings.HasSuffix(tc.path, "/taint") {
				body = `{"reason":"bad data"}`
			}
			code, out := apiCall(t, env, tc.tok, tc.method, tc.path, body)
			e, _ := out["error"].(map[string]any)
			if code != http.StatusNotFound || e["code"] != "not_found" {
				t.Fatalf("%d %v, want 404 not_found", code, out)
			}
			msg, _ := e["message"].(string)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
		})
	}
}

// A page keeps its own text: the backfill page of an unknown id says where
// to look among pages, not API endpoints.
func TestPageNotFoundPointsAtPages(t *testing.T) {
	env, _ := apiBFEnv(t)
	c := env.Client(t, auth.RoleViewer)
	status, page := env.GetText(t, c, "/backfills/bf_nope")
	if status != http.StatusNotFound || !strings.Contains(page, "the Backfills page lists every backfill") || strings.Contains(page, "/api/v1/") {
		t.Fatalf("%d %s", status, page)
	}
}

// A reused Idempotency-Key with another body is a 409 that says how to fix
// it: a new key for a new request, or the original body again.
func TestIdempotencyKeyReusedSaysHowToFix(t *testing.T) {
	env, tok := apiBFEnv(t)
	b := apiCreate(t, env, tok, apiFeb, "Idempotency-Key", "feb")
	code, out := apiCall(t, env, tok, "POST", "/api/v1/backfills", strings.Replace(apiFeb, `"chunk_size":7`, `"chunk_size":8`, 1), "Idempotency-Key", "feb")
	e, _ := out["error"].(map[string]any)
	msg, _ := e["message"].(string)
	if code != http.StatusConflict || e["field"] != "Idempotency-Key" || !strings.Contains(msg, b["id"].(string)) ||
		!strings.Contains(msg, "send a new Idempotency-Key for a new request") || !strings.Contains(msg, "repeat the original body") {
		t.Fatalf("%d %v", code, out)
	}
	mat := `{"asset":"a.daily","partition":"2025-01-01","status":"materialized"}`
	if code, out := apiCall(t, env, tok, "POST", "/api/v1/materializations", mat, "Idempotency-Key", "m1"); code != http.StatusCreated {
		t.Fatalf("report %d %v", code, out)
	}
	code, out = apiCall(t, env, tok, "POST", "/api/v1/materializations", strings.Replace(mat, "01-01", "01-02", 1), "Idempotency-Key", "m1")
	e, _ = out["error"].(map[string]any)
	msg, _ = e["message"].(string)
	if code != http.StatusConflict || !strings.Contains(msg, "send a new Idempotency-Key for a new batch") || !strings.Contains(msg, "repeat the original batch") {
		t.Fatalf("%d %v", code, out)
	}
}

// Every list's cursor is opaque, and a malformed one is a 400 on the cursor
// field that says what to send instead. The backfills and chunks lists gave
// out plain integers before: a stored one still works.
func TestListCursorsAreOpaque(t *testing.T) {
	env, tok := apiBFEnv(t)
	admin := env.AdminToken()
	var ids []string
	for i := range 3 {
		body := fmt.Sprintf(`{"assets":["a.daily"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-05"},"chunk_size":1,"title":"b%d"}`, i)
		b := apiCreate(t, env, tok, body)
		ids = append(ids, b["id"].(string))
	}
	for _, id := range ids {
		apiWaitState(t, env, tok, id, "SUCCEEDED")
	}
	// walk follows next_cursor from the first page and answers the ids in order.
	walk := func(path, list, field string) []string {
		t.Helper()
		var got []string
		cursor := ""
		for page := 0; page < 10; page++ {
			code, out := apiCall(t, env, tok, "GET", path+"&cursor="+url.QueryEscape(cursor), "")
			if code != 200 {
				t.Fatalf("%s cursor %q: %d %v", path, cursor, code, out)
			}
			for _, it := range out[list].([]any) {
				got = append(got, fmt.Sprint(it.(map[string]any)[field]))
			}
			cursor = out["next_cursor"].(string)
			if cursor == "" {
				return got
			}
			if _, err := strconv.ParseInt(cursor, 10, 64); err == nil {
				t.Fatalf("%s: next_cursor %q is a plain integer, not an opaque cursor", path, cursor)
			}
		}
		t.Fatalf("%s: no last page", path)
		return nil
	}
	if got := walk("/api/v1/backfills?limit=2", "backfills", "id"); strings.Join(got, ",") != ids[2]+","+ids[1]+","+ids[0] {
		t.Errorf("backfills %v, want %v newest first", got, ids)
	}
	chunks := "/api/v1/backfills/" + ids[0] + "/chunks"
	if got := walk(chunks+"?limit=2", "chunks", "chunk"); strings.Join(got, ",") != "0,1,2,3,4" {
		t.Errorf("chunks %v", got)
	}
	// Integers these lists gave out before still work.
	if _, out := apiCall(t, env, tok, "GET", chunks+"?cursor=1", ""); len(out["chunks"].([]any)) != 3 {
		t.Errorf("legacy chunk cursor 1: %v", out)
	}
	if _, out := apiCall(t, env, tok, "GET", "/api/v1/backfills?cursor=999999", ""); len(out["backfills"].([]any)) != 3 {
		t.Errorf("legacy backfill cursor: %v", out)
	}
	_, evs := apiCall(t, env, tok, "GET", "/api/v1/backfills/"+ids[0]+"/events?limit=1", "")
	evCursor := evs["next_cursor"].(string)
	_, bfs := apiCall(t, env, tok, "GET", "/api/v1/backfills?limit=1", "")
	bfCursor := bfs["next_cursor"].(string)
	for _, tc := range []struct{ path, tok string }{
		{"/api/v1/backfills?cursor=bogus", tok},
		{"/api/v1/backfills?cursor=0", tok},
		{"/api/v1/backfills?cursor=-3", tok},
		{"/api/v1/backfills?cursor=" + evCursor, tok}, // another list's cursor
		{chunks + "?cursor=-1", tok},
		{chunks + "?cursor=1.5", tok},
		{chunks + "?cursor=" + bfCursor, tok},
		{"/api/v1/backfills/" + ids[0] + "/events?cursor=bogus", tok},
		{"/api/v1/conflicts?cursor=bogus", tok},
		{"/api/v1/assets/a.daily/partitions?cursor=bogus", tok},
		{"/api/v1/users?cursor=bogus", admin},
		{"/api/v1/tokens?cursor=bogus", tok},
	} {
		code, out := apiCall(t, env, tc.tok, "GET", tc.path, "")
		e, _ := out["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if code != http.StatusBadRequest || e["field"] != "cursor" ||
			!strings.Contains(msg, "pass the next_cursor of the previous page") || !strings.Contains(msg, "leave cursor out") {
			t.Errorf("%s: %d %v", tc.path, code, out)
		}
	}
}

// A partition's history pages like every other list: limit, cursor and
// next_cursor, newest first, every instance once, past the 1,000 it used
// to stop at.
func TestPartitionHistoryPages(t *testing.T) {
	env, tok := apiBFEnv(t)
	const n = 1003
	var items []string
	for i := range n {
		// Many share a finish time: the order must still be total.
		items = append(items, fmt.Sprintf(`{"asset":"a.daily","partition":"2025-01-09","status":"materialized","run_id":"ext-%04d","at":"2025-01-10T00:%02d:00Z"}`, i, i%7))
	}
	if code, out := apiCall(t, env, tok, "POST", "/api/v1/materializations", "["+strings.Join(items, ",")+"]"); code != http.StatusCreated {
		t.Fatalf("report %d %v", code, out)
	}
	path := "/api/v1/assets/a.daily/partitions/2025-01-09/history"
	walk := func(limit int) []string {
		t.Helper()
		var ids []string
		cursor := ""
		for page := 0; page <= n; page++ {
			code, out := apiCall(t, env, tok, "GET", fmt.Sprintf("%s?limit=%d&cursor=%s", path, limit, url.QueryEscape(cursor)), "")
			if code != 200 {
				t.Fatalf("limit %d cursor %q: %d %v", limit, cursor, code, out)
			}
			insts := out["instances"].([]any)
			if len(insts) > limit {
				t.Fatalf("limit %d: %d instances", limit, len(insts))
			}
			for _, it := range insts {
				ids = append(ids, it.(map[string]any)["id"].(string))
			}
			next, ok := out["next_cursor"].(string)
			if !ok {
				t.Fatalf("no next_cursor: %v", out["next_cursor"])
			}
			if next == "" {
				return ids
			}
			cursor = next
		}
		t.Fatalf("limit %d: no last page", limit)
		return nil
	}
	all := walk(1000)
	seen := map[string]bool{}
	for _, id := range all {
		seen[id] = true
	}
	if len(all) != n || len(seen) != n {
		t.Fatalf("walked %d instances (%d distinct), want %d", len(all), len(seen), n)
	}
	if small := walk(7); strings.Join(small, ",") != strings.Join(all, ",") {
		t.Fatalf("pages of 7 answer another order than pages of 1000")
	}
	// Without limit: the first 100 (the default of every list).
	if _, out := apiCall(t, env, tok, "GET", path, ""); len(out["instances"].([]any)) != 100 || out["next_cursor"] == "" {
		t.Fatalf("default page: %d instances, next %v", len(out["instances"].([]any)), out["next_cursor"])
	}
	for _, q := range []string{"cursor=bogus", "cursor=" + url.QueryEscape(encodeOtherListCursor(t, env, tok)), "limit=0", "limit=1001"} {
		code, out := apiCall(t, env, tok, "GET", path+"?"+q, "")
		e, _ := out["error"].(map[string]any)
		if code != http.StatusBadRequest || (e["field"] != "cursor" && e["field"] != "limit") {
			t.Errorf("%s: %d %v", q, code, out)
		}
	}
}

// encodeOtherListCursor is a real cursor of another list (partitions).
func encodeOtherListCursor(t *testing.T, env *testkit.Env, tok string) string {
	t.Helper()
	_, out := apiCall(t, env, tok, "GET", "/api/v1/assets/a.daily/partitions?limit=1", "")
	return out["next_cursor"].(string)
}

// TestCursorsBelongToTheirParent: a cursor of one asset's partitions, or of
// one backfill's chunks or events, is refused (400 on cursor) by another
// asset's or backfill's list, where it would have started a page at a
// position that means nothing there; on its own list it pages on.
func TestCursorsBelongToTheirParent(t *testing.T) {
	t.Parallel()
	env, tok := operatorEnv(t, testkit.Assets(
		testkit.Asset("a.daily", "{daily: {start: 2025-01-01, end: 2025-04-01}}"),
		testkit.Asset("b.daily", "{daily: {start: 2025-01-01, end: 2025-04-01}}")))
	sel := `{"assets":["a.daily"],"chunk_size":1,"selector":{"type":"range","start":"2025-01-01","end":"2025-01-04"}}`
	one, two := apiCreate(t, env, tok, sel)["id"].(string), apiCreate(t, env, tok, sel)["id"].(string)
	apiWaitState(t, env, tok, one, "SUCCEEDED")
	apiWaitState(t, env, tok, two, "SUCCEEDED")
	for _, c := range []struct{ own, other string }{
		{"/api/v1/assets/a.daily/partitions", "/api/v1/assets/b.daily/partitions"},
		{"/api/v1/backfills/" + one + "/chunks", "/api/v1/backfills/" + two + "/chunks"},
		{"/api/v1/backfills/" + one + "/events", "/api/v1/backfills/" + two + "/events"},
	} {
		code, first := apiCall(t, env, tok, "GET", c.own+"?limit=1", "")
		next, _ := first["next_cursor"].(string)
		if code != 200 || next == "" {
			t.Fatalf("%s?limit=1: %d %v", c.own, code, first)
		}
		if code, page := apiCall(t, env, tok, "GET", c.own+"?limit=1&cursor="+url.QueryEscape(next), ""); code != 200 {
			t.Errorf("%s with its own cursor: %d %v", c.own, code, page)
		}
		code, out := apiCall(t, env, tok, "GET", c.other+"?limit=1&cursor="+url.QueryEscape(next), "")
		e, _ := out["error"].(map[string]any)
		if code != http.StatusBadRequest || e["field"] != "cursor" || !strings.Contains(fmt.Sprint(e["message"]), "not one this list gave out") {
			t.Errorf("%s with %s's cursor: %d %v, want 400 on cursor", c.other, c.own, code, out)
		}
	}
}
