package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
)

func TestBackfillButtonsPerStateAndRole(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, false)
	b := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-10", 2)
	clients := map[string]*http.Client{
		"viewer": env.Client(t, auth.RoleViewer), "operator": env.Client(t, auth.RoleOperator), "admin": env.Client(t, auth.RoleAdmin)}
	cases := []struct {
		state     string
		failed    int64
		want      []string
		badge     string
		withKids  bool
		terminate bool
	}{
		{db.BackfillPending, 0, []string{"pause", "cancel"}, "Pending", false, false},
		{db.BackfillRunning, 0, []string{"pause", "cancel"}, "Running", false, false},
		{db.BackfillPaused, 0, []string{"resume", "cancel"}, "Paused", false, false},
		{db.BackfillPaused, 3, []string{"resume", "cancel", "retry-failed"}, "Paused, with failures", false, false},
		{db.BackfillCanceling, 0, []string{"terminate"}, "Canceling", false, false},
		{db.BackfillCanceling, 0, nil, "Canceling", false, true},
		{db.BackfillCanceled, 0, nil, "Canceled", false, false},
		{db.BackfillSucceeded, 0, nil, "Succeeded", false, false},
		{db.BackfillFailed, 3, []string{"retry-failed"}, "Failed", false, false},
	}
	all := []string{"pause", "resume", "cancel", "retry-failed", "terminate"}
	for _, tc := range cases {
		if _, err := env.Store.RawWriter().Exec(`UPDATE backfills SET state=?, partitions_failed=?, runs_failed=?, terminate=? WHERE id=?`, tc.state, tc.failed, min(tc.failed, 1), tc.terminate, b.ID); err != nil {
			t.Fatal(err)
		}
		for role, c := range clients {
			status, doc := pgGet(t, env, c, "/backfills/"+b.ID)
			if status != http.StatusOK {
				t.Fatalf("%s as %s: status %d", tc.state, role, status)
			}
			if got := strings.TrimSpace(doc.Find(`[data-testid="state-badge"]`).First().Text()); !strings.Contains(got, tc.badge) {
				t.Errorf("%s (failed %d): badge %q, want %q", tc.state, tc.failed, got, tc.badge)
			}
			want := map[string]bool{}
			if role != "viewer" {
				for _, a := range tc.want {
					want[a] = true
				}
			}
			for _, a := range all {
				has := doc.Find(`[data-testid="action-`+a+`"]`).Length() > 0
				if has != want[a] {
					t.Errorf("state %s failed %d as %s: button %s present=%v, want %v", tc.state, tc.failed, role, a, has, want[a])
				}
			}
			// Every button's form carries the CSRF token and the version.
			doc.Find(`[data-testid="actions"] form`).Each(func(_ int, f *goquery.Selection) {
				if f.Find(`input[name="_csrf"]`).AttrOr("value", "") == "" || f.Find(`input[name="expected_state_version"]`).AttrOr("value", "") == "" {
					t.Errorf("state %s as %s: a button form lacks _csrf or expected_state_version", tc.state, role)
				}
			})
		}
	}
}

func TestTransitionConflictAndRefusal(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, false)
	b := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-10", 2)
	c := env.Client(t, auth.RoleOperator)
	// Another tab pauses and resumes: the version moves on.
	if _, err := eng.Transition(t.Context(), b.ID, jobs.ActPause, 0, false, "other"); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Transition(t.Context(), b.ID, jobs.ActResume, 0, false, "other"); err != nil {
		t.Fatal(err)
	}
	resp := env.SessionPost(t, c, "/backfills/"+b.ID+"/pause", url.Values{"expected_state_version": {fmt.Sprint(b.StateVersion)}})
	doc := pgDoc(t, resp)
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("stale pause: status %d", resp.StatusCode)
	}
	if msg := doc.Find(`[data-testid="message"]`).Text(); !strings.Contains(msg, "Someone changed this backfill") {
		t.Errorf("stale pause message %q", msg)
	}
	now, _ := env.Store.Backfill(t.Context(), b.ID)
	if now.State != db.BackfillRunning {
		t.Errorf("stale pause changed the state to %s", now.State)
	}
	// The reloaded page carries the new version: pausing now works.
	v := doc.Find(`[data-testid="backfill-summary"]`).AttrOr("data-version", "")
	if v != fmt.Sprint(now.StateVersion) {
		t.Errorf("reloaded page has version %s, want %d", v, now.StateVersion)
	}
	resp = env.SessionPost(t, c, "/backfills/"+b.ID+"/pause", url.Values{"expected_state_version": {v}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("pause: status %d", resp.StatusCode)
	}
	// Resume is allowed from PAUSED only; pausing twice is refused clearly.
	now, _ = env.Store.Backfill(t.Context(), b.ID)
	resp = env.SessionPost(t, c, "/backfills/"+b.ID+"/pause", url.Values{"expected_state_version": {fmt.Sprint(now.StateVersion)}})
	doc = pgDoc(t, resp)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(doc.Find(`[data-testid="message"]`).Text(), "cannot pause") {
		t.Errorf("pause of a paused backfill: status %d, message %q", resp.StatusCode, doc.Find(`[data-testid="message"]`).Text())
	}
	after, _ := env.Store.Backfill(t.Context(), b.ID)
	if after.StateVersion != now.StateVersion {
		t.Error("a refused transition changed the version")
	}
	// Viewer: refused; cancel with terminate from an operator: canceled.
	if resp := env.SessionPost(t, env.Client(t, auth.RoleViewer), "/backfills/"+b.ID+"/cancel", url.Values{}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("viewer cancel: status %d", resp.StatusCode)
	}
	resp = env.SessionPost(t, c, "/backfills/"+b.ID+"/cancel", url.Values{"expected_state_version": {fmt.Sprint(after.StateVersion)}, "terminate": {"1"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("cancel: status %d", resp.StatusCode)
	}
	final, _ := env.Store.Backfill(t.Context(), b.ID)
	if final.State != db.BackfillCanceled {
		t.Errorf("after cancel: %s", final.State)
	}
	if resp := env.SessionPost(t, c, "/backfills/"+b.ID+"/explode", url.Values{}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown action: status %d", resp.StatusCode)
	}
}

// TestRetryFailedFromTwoTabsLaunchesOneChild: two pages of a failed backfill
// open before either retries carry the same retry request, so pressing
// "Retry failed" in the second lands on the child the first launched
// instead of building the failed partitions a second time. Before, every
// page render had a request id of its own: the second tab made a duplicate
// child.
func TestRetryFailedFromTwoTabsLaunchesOneChild(t *testing.T) {
	t.Parallel()
	env, tok, b := apiBackfillEnv(t, failingDailyWS,
		`{"assets":["f.daily"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-03"},"chunk_size":3,"max_concurrent_runs":1}`)
	id := b["id"].(string)
	apiWaitState(t, env, tok, id, "FAILED")
	op := env.Client(t, auth.RoleOperator)
	form := func() url.Values {
		_, doc := pgGet(t, env, op, "/backfills/"+id)
		f := url.Values{}
		doc.Find(`form:has([data-testid="action-retry-failed"]) input[type="hidden"]`).Each(func(_ int, s *goquery.Selection) {
			f.Set(s.AttrOr("name", ""), s.AttrOr("value", ""))
		})
		if f.Get("retry_request_id") == "" {
			t.Fatalf("no Retry failed form on the page")
		}
		f.Del("_csrf") // SessionPost adds the session's
		return f
	}
	tabA, tabB := form(), form()
	press := func(f url.Values) string {
		r := env.SessionPost(t, op, "/backfills/"+id+"/retry-failed", f)
		if r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/backfills/bf_") {
			t.Fatalf("retry failed: %d → %q", r.StatusCode, r.Header.Get("Location"))
		}
		return r.Header.Get("Location")
	}
	first := press(tabA)
	if second := press(tabB); second != first {
		t.Fatalf("the second tab launched %s beside %s", second, first)
	}
	children := func() (n int) {
		env.Store.RawReader().Get(&n, `SELECT COUNT(*) FROM backfills WHERE parent_backfill_id=?`, id)
		return n
	}
	if n := children(); n != 1 {
		t.Fatalf("%d children after two presses of one retry, want 1", n)
	}
	// A reloaded page links the child (by its name, not its id) instead of
	// offering the button.
	if _, doc := pgGet(t, env, op, "/backfills/"+id); doc.Find(`[data-testid="action-retry-failed"]`).Length() != 0 ||
		doc.Find(`a[data-testid="child-link"][href="`+first+`"]`).Length() != 1 ||
		strings.Contains(doc.Find(`a[data-testid="child-link"]`).Text(), strings.TrimPrefix(first, "/backfills/")) {
		t.Fatalf("the parent's page after the retry still offers it, or does not link %s", first)
	}
}
