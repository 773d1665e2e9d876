package handlers_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

func TestNewBackfillPrefillAndPreview(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	c := env.Client(t, auth.RoleOperator)
	status, doc := pgGet(t, env, c, "/backfills/new?asset=t.daily&start=2025-01-01&end=2025-01-20")
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	if doc.Find(`[data-testid="asset-t.daily"]`).AttrOr("checked", "no") == "no" {
		t.Error("asset not prefilled")
	}
	if doc.Find(`[data-testid="start"]`).AttrOr("value", "") != "2025-01-01" || doc.Find(`[data-testid="end"]`).AttrOr("value", "") != "2025-01-20" {
		t.Error("range not prefilled")
	}
	if got := doc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); got != "20" {
		t.Errorf("prefilled preview shows %q partitions, want 20", got)
	}
	if doc.Find(`[data-testid="preview-grid"]`).Length() != 1 {
		t.Error("the preview has no mini grid of the selection")
	}
	if doc.Find(`[data-testid="idempotency-key"]`).AttrOr("value", "") == "" {
		t.Error("no idempotency key in the form")
	}
	if doc.Find(`form[data-testid="backfill-form"] input[name="_csrf"]`).AttrOr("value", "") == "" {
		t.Error("the form has no CSRF token")
	}
	// The live preview (htmx) answers the panel alone.
	form := url.Values{"asset": {"t.daily"}, "selector": {"range"}, "start": {"2025-01-01"}, "end": {"2025-01-05"}, "chunk_size": {"2"}, "max_concurrent_runs": {"1"}, "priority": {"0"}}
	form.Set("_csrf", env.CSRF(t, c))
	req, _ := http.NewRequest(http.MethodPost, env.URL+"/backfills/preview", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("HX-Request", "true")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	pdoc := pgDoc(t, resp)
	if resp.StatusCode != http.StatusOK || pdoc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", "") != "5" || pdoc.Find(`[data-testid="preview-chunks"]`).AttrOr("data-n", "") != "3" {
		t.Errorf("htmx preview: status %d, partitions %q chunks %q", resp.StatusCode, pdoc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""), pdoc.Find(`[data-testid="preview-chunks"]`).AttrOr("data-n", ""))
	}
	if pdoc.Find("header.top").Length() != 0 {
		t.Error("the htmx preview renders the page frame")
	}
	// Viewers may preview but are not offered Launch.
	_, vdoc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/backfills/new?asset=t.daily")
	if vdoc.Find(`[data-testid="launch"]`).Length() != 0 || vdoc.Find(`[data-testid="launch-not-allowed"]`).Length() != 1 {
		t.Error("a viewer is offered Launch")
	}
}

func pgCountBackfills(t *testing.T, env *testkit.Env) int {
	t.Helper()
	var n int
	if err := env.Store.RawReader().Get(&n, `SELECT COUNT(*) FROM backfills`); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestLaunchBadInputCreatesNothing(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	c := env.Client(t, auth.RoleOperator)
	base := url.Values{"asset": {"t.daily"}, "selector": {"range"}, "start": {"2025-01-01"}, "end": {"2025-01-05"}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}, "priority": {"0"}, "idempotency_key": {"k-bad"}}
	cases := []struct{ set, value, field string }{
		{"chunk_size", "zero", "chunk_size"},
		{"chunk_size", "0", "chunk_size"},
		{"chunk_size", "1000000", "chunk_size"},
		{"max_concurrent_runs", "-3", "max_concurrent_runs"},
		{"priority", "high", "priority"},
		{"start", "2025-13-45", "start"},
		{"end", "2024-01-01", "end"},
		{"asset", "", "assets"},
		{"asset", "no.such", "assets"},
		{"selector", "weird", "selector"},
		{"dimension", "region", "dimension"},
		{"title", strings.Repeat("x", 201), "title"},
	}
	for _, tc := range cases {
		for _, path := range []string{"/backfills", "/backfills/preview"} {
			form := url.Values{}
			for k, v := range base {
				form[k] = v
			}
			if tc.value == "" {
				form.Del(tc.set)
			} else {
				form.Set(tc.set, tc.value)
			}
			resp := env.SessionPost(t, c, path, form)
			doc := pgDoc(t, resp)
			if resp.StatusCode < 400 || resp.StatusCode >= 500 {
				t.Errorf("%s with %s=%q: status %d", path, tc.set, tc.value, resp.StatusCode)
			}
			if doc.Find(`[data-testid="error-`+tc.field+`"]`).Length() != 1 {
				t.Errorf("%s with %s=%q: no message next to %s", path, tc.set, tc.value, tc.field)
			}
			if doc.Find(`form[data-testid="backfill-form"]`).Length() != 1 {
				t.Errorf("%s with %s=%q: the form is not rendered again", path, tc.set, tc.value)
			}
		}
	}
	// Explicit list with an unknown key.
	// The message names the line (blank lines count as lines).
	form := url.Values{"asset": {"t.daily"}, "selector": {"explicit"}, "keys": {"2025-01-01\n\n2025-01-01\nnot-a-day"}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}, "priority": {"0"}}
	for _, path := range []string{"/backfills", "/backfills/preview"} {
		doc := pgDoc(t, env.SessionPost(t, c, path, form))
		if msg := doc.Find(`[data-testid="error-keys"]`).Text(); !strings.HasPrefix(strings.TrimSpace(msg), "line 4: ") || !strings.Contains(msg, "not-a-day") {
			t.Errorf("%s: an unknown explicit key's message next to the keys: %q", path, msg)
		}
	}
	if n := pgCountBackfills(t, env); n != 0 {
		t.Fatalf("bad input created %d backfills", n)
	}
	// A viewer may not launch; a missing or forged CSRF token is refused.
	good := url.Values{}
	for k, v := range base {
		good[k] = v
	}
	if resp := env.SessionPost(t, env.Client(t, auth.RoleViewer), "/backfills", good); resp.StatusCode != http.StatusForbidden {
		t.Errorf("viewer launch: status %d", resp.StatusCode)
	}
	for _, tok := range []string{"", "forged-token"} {
		f := url.Values{}
		for k, v := range good {
			f[k] = v
		}
		resp, err := c.PostForm(env.URL+"/backfills", pgWithCSRF(f, tok))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("CSRF %q: status %d", tok, resp.StatusCode)
		}
		if !strings.Contains(strings.ToLower(string(body)), "csrf") && !strings.Contains(strings.ToLower(string(body)), "token") {
			t.Errorf("CSRF %q refused without a clear message: %.200s", tok, body)
		}
	}
	if n := pgCountBackfills(t, env); n != 0 {
		t.Fatalf("refused launches created %d backfills", n)
	}
}

func pgWithCSRF(f url.Values, tok string) url.Values {
	if tok != "" {
		f.Set("_csrf", tok)
	}
	return f
}

func TestLaunchIsIdempotent(t *testing.T) {
	t.Parallel()
	env, _ := pgEnv(t, false)
	c := env.Client(t, auth.RoleOperator)
	form := url.Values{"asset": {"t.daily"}, "selector": {"range"}, "start": {"2025-01-01"}, "end": {"2025-01-05"}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}, "priority": {"0"}, "idempotency_key": {"bfk_double"}}
	var locs []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := env.SessionPost(t, c, "/backfills", form)
			mu.Lock()
			defer mu.Unlock()
			if resp.StatusCode != http.StatusSeeOther {
				t.Errorf("launch: status %d", resp.StatusCode)
			}
			locs = append(locs, resp.Header.Get("Location"))
		}()
	}
	wg.Wait()
	if n := pgCountBackfills(t, env); n != 1 {
		t.Fatalf("a triple submit created %d backfills", n)
	}
	for _, l := range locs[1:] {
		if l != locs[0] || !strings.HasPrefix(l, "/backfills/bf_") {
			t.Fatalf("redirects differ: %v", locs)
		}
	}
}
