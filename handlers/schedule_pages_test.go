package handlers_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
)

func text(s *goquery.Selection) string { return strings.Join(strings.Fields(s.Text()), " ") }

// TestAutomationPage: every schedule with its state, cron and zone, next
// tick, last outcome and a strip of its recent outcomes.
func TestAutomationPage(t *testing.T) {
	t.Parallel()
	env, sched, _ := schedEnv(t)
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 0, 30, 0, 0, time.UTC)
	sched.Evaluate(ctx, t0)
	sched.Evaluate(ctx, t0.Add(6*time.Hour)) // 5 missed, 1 launched
	if _, err := sched.SetPaused(ctx, "regions", true, "alice"); err != nil {
		t.Fatal(err)
	}
	viewer := env.Client(t, auth.RoleViewer)
	code, doc := pgGet(t, env, viewer, "/automation")
	if code != 200 || doc.Find(`[data-testid="nav-automation"][aria-current="page"]`).Length() != 1 {
		t.Fatalf("automation: %d, nav %q", code, doc.Find(`nav`).Text())
	}
	rows := doc.Find(`[data-testid="schedule-row"]`)
	if rows.Length() != 3 {
		t.Fatalf("%d rows", rows.Length())
	}
	h := rows.Eq(0)
	if h.AttrOr("data-name", "") != "hourly" || h.AttrOr("data-state", "") != "running" || text(h.Find(`[data-testid="schedule-tz"]`)) != "Europe/Berlin" ||
		!strings.Contains(text(h.Find(`[data-testid="next-tick"]`)), "UTC)") ||
		h.Find(`[data-testid="last-tick"] [data-testid="tick-outcome"]`).AttrOr("data-outcome", "") != "launched" {
		t.Fatalf("hourly row: %s", text(h))
	}
	cells := h.Find(`[data-testid="tick-strip"] rect`)
	if cells.Length() != 6 || cells.First().AttrOr("data-outcome", "") != "skipped" || cells.Last().AttrOr("data-outcome", "") != "launched" {
		t.Fatalf("strip: %d cells, oldest first", cells.Length())
	}
	if h.Find(`[data-testid="schedule-link"]`).AttrOr("href", "") != "/schedules/hourly" {
		t.Fatal("link to the schedule page")
	}
	if r := rows.Eq(1); r.AttrOr("data-state", "") != "paused" || r.Find(`[data-testid="tick-strip"] rect`).Length() != 1 {
		t.Fatalf("regions row: %s", text(r))
	}
	if r := rows.Eq(2); r.AttrOr("data-state", "") != "disabled" || text(r.Find(`[data-testid="next-tick"]`)) != "none" {
		t.Fatalf("off row: %s", text(r))
	}
}

// TestSchedulePage: definition, next 5 ticks in its zone and UTC, the
// preview of the next tick's backfill, tick history with each launched
// tick's backfill, paged and filtered by outcome; no buttons for viewers.
func TestSchedulePage(t *testing.T) {
	t.Parallel()
	env, sched, _ := schedEnv(t)
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 0, 30, 0, 0, time.UTC)
	sched.Evaluate(ctx, t0)
	sched.Evaluate(ctx, t0.Add(30*time.Hour)) // within the day: 1 launched, the 29 older missed
	viewer := env.Client(t, auth.RoleViewer)
	code, doc := pgGet(t, env, viewer, "/schedules/hourly")
	if code != 200 {
		t.Fatalf("%d %s", code, text(doc.Selection))
	}
	if text(doc.Find(`[data-testid="def-Cron"]`)) != "5 * * * *" || text(doc.Find(`[data-testid="def-Time zone"]`)) != "Europe/Berlin" ||
		text(doc.Find(`[data-testid="counters"]`)) != "1 launched, 29 skipped, 0 failed" {
		t.Fatalf("definition: %s", text(doc.Find(`[data-testid="definition"]`)))
	}
	next := doc.Find(`[data-testid="next-tick-row"]`)
	if next.Length() != 5 || !strings.Contains(text(next.First()), "UTC") || !strings.Contains(text(next.First()), ":05 CE") {
		t.Fatalf("next ticks: %s", text(doc.Find(`[data-testid="next-ticks"]`)))
	}
	if text(doc.Find(`[data-testid="preview-partitions"]`)) != "1" || !strings.Contains(text(doc.Find(`[data-testid="preview-selection"]`)), "range") {
		t.Fatalf("preview: %s", text(doc.Find(`[data-testid="tick-preview"]`)))
	}
	if doc.Find(`[data-testid="schedule-actions"]`).Length() != 0 {
		t.Fatal("a viewer sees the buttons")
	}
	ticks := doc.Find(`[data-testid="tick-row"]`)
	if ticks.Length() != 25 || ticks.First().AttrOr("data-outcome", "") != "launched" {
		t.Fatalf("first page: %d ticks", ticks.Length())
	}
	link := ticks.First().Find(`[data-testid="tick-backfill"]`).AttrOr("href", "")
	if !strings.HasPrefix(link, "/backfills/") {
		t.Fatalf("a launched tick links to its backfill: %q", link)
	}
	older, ok := doc.Find(`[data-testid="next-page"]`).Attr("href")
	if !ok {
		t.Fatal("no older page")
	}
	_, doc2 := pgGet(t, env, viewer, older)
	if n := doc2.Find(`[data-testid="tick-row"]`).Length(); n != 5 || doc2.Find(`[data-testid="next-page"]`).Length() != 0 || doc2.Find(`[data-testid="first-page"]`).Length() != 1 {
		t.Fatalf("second page: %d ticks", n)
	}
	_, doc3 := pgGet(t, env, viewer, "/schedules/hourly?outcome=launched")
	if n := doc3.Find(`[data-testid="tick-row"]`).Length(); n != 1 || doc3.Find(`option[value="launched"][selected]`).Length() != 1 {
		t.Fatalf("launched only: %d", n)
	}
	// The launched backfill says it came from the schedule, on its page
	// and in the list, with a link back.
	_, bf := pgGet(t, env, viewer, link)
	if a := bf.Find(`[data-testid="launched-by"] [data-testid="created-by-schedule"]`); a.AttrOr("href", "") != "/schedules/hourly" || text(a) != "hourly" {
		t.Fatalf("backfill page: %s", text(bf.Find(`[data-testid="launched-by"]`)))
	}
	_, list := pgGet(t, env, viewer, "/backfills")
	if a := list.Find(`[data-testid="backfill-row"] [data-testid="created-by-schedule"][href="/schedules/hourly"]`); a.Length() != 1 || text(a) != "hourly" {
		t.Fatalf("backfills list: %s", text(list.Find(`[data-testid="backfills-table"]`)))
	}
}

// TestSchedulePageBadInput: an unknown schedule is a 404 page naming the
// declared ones, an unknown outcome filter a 400 that says which to use.
func TestSchedulePageBadInput(t *testing.T) {
	t.Parallel()
	env, _, _ := schedEnv(t)
	viewer := env.Client(t, auth.RoleViewer)
	code, doc := pgGet(t, env, viewer, "/schedules/nope")
	if msg := text(doc.Find(`[data-testid="error-message"]`)); code != 404 || msg != `unknown schedule "nope" (the workspace declares hourly, regions, off); the Automation page lists them` ||
		doc.Find(`[data-testid="error-back"]`).AttrOr("href", "") != "/automation" {
		t.Fatalf("%d %q, back to %q", code, msg, doc.Find(`[data-testid="error-back"]`).AttrOr("href", ""))
	}
	code, doc = pgGet(t, env, viewer, "/schedules/hourly?outcome=boom")
	if msg := text(doc.Find(`[data-testid="error-message"]`)); code != 400 || !strings.Contains(msg, `unknown outcome "boom"`) {
		t.Fatalf("%d %q", code, msg)
	}
}

// TestScheduleButtons: an operator pauses (then the page offers Resume),
// pausing again is refused with the page reloaded (409), Run now launches
// a backfill the page links to; a form without the CSRF token is refused
// and changes nothing.
func TestScheduleButtons(t *testing.T) {
	t.Parallel()
	env, _, tok := schedEnv(t)
	op := env.Client(t, auth.RoleOperator)
	_, doc := pgGet(t, env, op, "/schedules/regions")
	if doc.Find(`[data-testid="action-pause"]`).Length() != 1 || doc.Find(`[data-testid="action-trigger"]`).Length() != 1 ||
		doc.Find(`[data-testid="schedule-actions"] input[name="_csrf"]`).AttrOr("value", "") == "" {
		t.Fatalf("buttons: %s", text(doc.Find(`[data-testid="schedule-actions"]`)))
	}
	// No CSRF token: refused, nothing written.
	before := scheduleWrites(t, env)
	resp, err := op.PostForm(env.URL+"/schedules/regions/pause", url.Values{})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || scheduleWrites(t, env) != before {
		t.Fatalf("pause without CSRF: %d", resp.StatusCode)
	}
	if resp := env.SessionPost(t, op, "/schedules/regions/pause", nil); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/schedules/regions" {
		t.Fatalf("pause: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, doc = pgGet(t, env, op, "/schedules/regions")
	if doc.Find(`[data-testid="schedule-state"]`).AttrOr("data-state", "") != "paused" || doc.Find(`[data-testid="action-resume"]`).Length() != 1 ||
		!strings.Contains(text(doc.Find(`[data-testid="notice"]`)), "Schedule paused") || !strings.HasPrefix(text(doc.Find(`[data-testid="paused-by"]`)), "Paused by test-operator") {
		t.Fatalf("after pause: %s", text(doc.Find("main")))
	}
	before = scheduleWrites(t, env)
	resp = env.SessionPost(t, op, "/schedules/regions/pause", nil)
	page, _ := goquery.NewDocumentFromReader(resp.Body)
	if msg := text(page.Find(`[data-testid="message"]`)); resp.StatusCode != http.StatusConflict || msg != "Not done: schedule regions is already paused; use Resume to resume it. The page has been reloaded." {
		t.Fatalf("pause again: %d %q", resp.StatusCode, msg)
	}
	if scheduleWrites(t, env) != before {
		t.Fatal("a refused pause wrote")
	}
	if resp := env.SessionPost(t, op, "/schedules/regions/trigger", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("run now: %d", resp.StatusCode)
	}
	_, doc = pgGet(t, env, op, "/schedules/regions")
	link := doc.Find(`[data-testid="notice-link"]`).AttrOr("href", "")
	row := doc.Find(`[data-testid="tick-row"]`).First()
	if !strings.HasPrefix(link, "/backfills/") || row.Find(`[data-testid="tick-backfill"]`).AttrOr("href", "") != link || row.Find(`[data-testid="tick-manual"]`).Length() != 1 {
		t.Fatalf("after run now: notice %q, tick %s", link, text(row))
	}
	apiWaitState(t, env, tok, strings.TrimPrefix(link, "/backfills/"), "SUCCEEDED")
	if code, _ := pgGet(t, env, op, "/schedules/regions/explode"); code != http.StatusMethodNotAllowed && code != http.StatusNotFound {
		t.Fatalf("GET of an action: %d", code)
	}
	if resp := env.SessionPost(t, op, "/schedules/regions/explode", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown action: %d", resp.StatusCode)
	}
}
