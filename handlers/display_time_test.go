package handlers_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// withTZCookie sets the browser's zone cookie (what static/app.js sets) on c.
func withTZCookie(t *testing.T, env *testkit.Env, c *http.Client, zone string) {
	t.Helper()
	if c.Jar == nil {
		c.Jar, _ = cookiejar.New(nil)
	}
	u, _ := url.Parse(env.URL + "/")
	c.Jar.SetCookies(u, []*http.Cookie{{Name: "tz", Value: zone, Path: "/"}})
}

// tzUser signs in a new viewer with stored display zone zone ("" = none).
func tzUser(t *testing.T, env *testkit.Env, name, zone string) *http.Client {
	t.Helper()
	id := env.CreateUser(t, name, auth.RoleViewer, testkit.TestPassword)
	if zone != "" {
		if err := env.Store.SetUserTimezone(t.Context(), id, zone, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return env.Login(t, name, testkit.TestPassword)
}

// A user with a stored zone sees the partition page, the backfill page and
// the status board in that zone (each time saying it); a user without one
// sees the browser's zone from the tz cookie; the stored zone wins over the
// cookie; without either, or with a cookie that names no zone, UTC.
func TestPagesShowTimesInDisplayZone(t *testing.T) {
	env := seededEnv(t) // in five zones
	var mat struct {
		Asset string `db:"key"`
		Key   string `db:"partition_key"`
		At    int64  `db:"last_mat_at"`
	}
	if err := env.Store.RawReader().Get(&mat, `SELECT a.key, p.partition_key, p.last_mat_at FROM partition_status p JOIN assets a ON a.id = p.asset_id
		WHERE a.key = 'crm.accounts_snapshot' AND p.status = 'materialized' AND p.last_mat_at IS NOT NULL
		ORDER BY p.partition_key LIMIT 1`); err != nil { // its evidence has a time; which account the seed's draws materialized changes with the hour
		t.Fatalf("no seeded materialization: %v", err)
	}
	eng := env.Handler.Engine
	if eng == nil {
		eng = env.NewEngine(t, nil, jobs.Options{})
	}
	bf := testkit.CreateBackfill(t, eng, jobs.Request{Assets: []string{mat.Asset}, ChunkSize: 1, MaxConcurrentRuns: 1,
		Selector: jobs.Selector{Type: "explicit", Keys: []string{mat.Key}}, Title: "tz"})

	berlin, _ := time.LoadLocation("Europe/Berlin")
	newYork, _ := time.LoadLocation("America/New_York")
	bothBerlin := tzUser(t, env, "both", "Europe/Berlin")
	withTZCookie(t, env, bothBerlin, "America/New_York")
	cookieNY := tzUser(t, env, "cookie", "")
	withTZCookie(t, env, cookieNY, "America/New_York")
	badCookie := tzUser(t, env, "badcookie", "")
	withTZCookie(t, env, badCookie, "Mars/Olympus")
	for _, c := range []struct {
		name   string
		client *http.Client
		loc    *time.Location
		zones  string // the abbreviations the zone may show
	}{
		{"stored Berlin", tzUser(t, env, "berlin", "Europe/Berlin"), berlin, "CET|CEST"},
		{"stored Berlin over a New York cookie", bothBerlin, berlin, "CET|CEST"},
		{"New York cookie", cookieNY, newYork, "EST|EDT"},
		{"neither", tzUser(t, env, "plain", ""), time.UTC, "UTC"},
		{"cookie naming no zone", badCookie, time.UTC, "UTC"},
	} {
		stamp := func(ms int64) string { return db.FromMillis(ms).In(c.loc).Format("2006-01-02 15:04:05 MST") }
		zoneRE := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (` + c.zones + `)$`)

		code, doc := pgGet(t, env, c.client, "/assets/"+mat.Asset+"/partitions/"+url.PathEscape(mat.Key))
		at := strings.TrimSpace(doc.Find(`[data-testid="last-materialization"] dd`).First().Text())
		if code != http.StatusOK || at != stamp(mat.At) || !zoneRE.MatchString(at) {
			t.Errorf("%s: partition page: %d, last materialized at %q; want %q", c.name, code, at, stamp(mat.At))
		}
		if ev := doc.Find(`[data-testid="stale-evidence"]`).Text(); !regexp.MustCompile(`\d\d:\d\d:\d\d (`+c.zones+`)\b`).MatchString(ev) ||
			(c.loc != time.UTC && strings.Contains(ev, "UTC")) {
			t.Errorf("%s: partition page: staleness evidence %q is not in %s", c.name, ev, c.zones)
		}
		code, doc = pgGet(t, env, c.client, "/backfills/"+bf.ID)
		launched := strings.TrimSpace(doc.Find(`[data-testid="launched-by"]`).Text())
		if code != http.StatusOK || !strings.HasPrefix(launched, stamp(bf.CreatedAt)+" by ") {
			t.Errorf("%s: backfill page: %d, launched %q; want it at %q", c.name, code, launched, stamp(bf.CreatedAt))
		}
		code, doc = pgGet(t, env, c.client, "/status")
		updated := strings.TrimSpace(doc.Find(`[data-testid="updated-at"]`).Text())
		if code != http.StatusOK || !zoneRE.MatchString(updated) {
			t.Errorf("%s: status board: %d, updated %q; want a time in %s", c.name, code, updated, c.zones)
		}
		if got, err := time.ParseInLocation("2006-01-02 15:04:05", updated[:19], c.loc); err != nil || time.Since(got).Abs() > time.Minute {
			t.Errorf("%s: status board updated %q is not now in %s (%v)", c.name, updated, c.loc, err)
		}
	}
}

// The display time zone setting: any signed-in role sets their own zone on
// /settings/timezone; a name the time zone database does not know is
// refused at its field with an example and writes nothing, as is a post
// without the CSRF token; a known one is stored and shown from then on; the
// empty choice goes back to the browser's zone.
func TestSetDisplayTimezone(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	id := env.CreateUser(t, "vera", auth.RoleViewer, testkit.TestPassword)
	c := env.Login(t, "vera", testkit.TestPassword)
	withTZCookie(t, env, c, "America/New_York")
	stored := func() string {
		z, err := env.Store.UserTimezone(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return z
	}

	code, doc := pgGet(t, env, c, "/settings/timezone")
	sel := doc.Find(`[data-testid="timezone-select"]`)
	if code != http.StatusOK || sel.Find(`option[value="UTC"]`).Length() != 1 || sel.Find(`option[value="Europe/Berlin"]`).Length() != 1 ||
		!strings.Contains(sel.Find(`option[value=""]`).Text(), "Browser default (America/New_York)") || sel.Find(`option[value=""][selected]`).Length() != 1 {
		t.Fatalf("settings page: %d, browser option %q", code, sel.Find(`option[value=""]`).Text())
	}
	if doc.Find(`form[data-testid="timezone-form"] input[name="_csrf"]`).AttrOr("value", "") == "" {
		t.Fatal("the form carries no CSRF token")
	}
	if ex := doc.Find(`[data-testid="tz-example"]`).Text(); !regexp.MustCompile(` (EST|EDT)$`).MatchString(ex) {
		t.Fatalf("example time %q is not in the browser's zone", ex)
	}

	for _, bad := range []string{"Mars/Olympus", "Local", "../../etc/passwd", "Europe/Berlin; x", "europe/nowhere", strings.Repeat("A", 200)} {
		r := env.SessionPost(t, c, "/settings/timezone", url.Values{"timezone": {bad}})
		doc := pgDoc(t, r)
		msg := doc.Find(`[data-testid="form-error"]`)
		if r.StatusCode != http.StatusBadRequest || msg.AttrOr("data-field", "") != "timezone" || !strings.Contains(msg.Text(), "Europe/Berlin") ||
			!strings.Contains(msg.Text(), "is not a time zone") {
			t.Errorf("%q: %d field %q %q", bad, r.StatusCode, msg.AttrOr("data-field", ""), msg.Text())
		}
		if doc.Find(`select[name="timezone"][aria-invalid]`).Length() != 1 {
			t.Errorf("%q: the select is not marked invalid", bad)
		}
		if z := stored(); z != "" {
			t.Fatalf("%q: a refused zone was stored: %q", bad, z)
		}
	}
	resp, err := c.PostForm(env.URL+"/settings/timezone", url.Values{"timezone": {"Asia/Tokyo"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || stored() != "" {
		t.Fatalf("without CSRF: %d, stored %q", resp.StatusCode, stored())
	}

	r := env.SessionPost(t, c, "/settings/timezone", url.Values{"timezone": {"Asia/Tokyo"}})
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/settings/timezone" || stored() != "Asia/Tokyo" {
		t.Fatalf("set Asia/Tokyo: %d → %q, stored %q", r.StatusCode, r.Header.Get("Location"), stored())
	}
	_, doc = pgGet(t, env, c, "/settings/timezone")
	if !strings.Contains(doc.Find(`[data-testid="notice"]`).Text(), "Asia/Tokyo") || doc.Find(`option[value="Asia/Tokyo"][selected]`).Length() != 1 ||
		!strings.HasSuffix(doc.Find(`[data-testid="tz-example"]`).Text(), " JST") {
		t.Fatalf("after setting: notice %q, example %q", doc.Find(`[data-testid="notice"]`).Text(), doc.Find(`[data-testid="tz-example"]`).Text())
	}
	if _, doc := pgGet(t, env, c, "/status"); !strings.HasSuffix(doc.Find(`[data-testid="updated-at"]`).Text(), " JST") {
		t.Fatalf("status board after setting Tokyo: %q", doc.Find(`[data-testid="updated-at"]`).Text())
	}

	// Another role, another user: an operator sets their own, not vera's.
	opID := env.CreateUser(t, "otto", auth.RoleOperator, testkit.TestPassword)
	op := env.Login(t, "otto", testkit.TestPassword)
	if r := env.SessionPost(t, op, "/settings/timezone", url.Values{"timezone": {"UTC"}}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("operator: %d", r.StatusCode)
	}
	if z, _ := env.Store.UserTimezone(t.Context(), opID); z != "UTC" || stored() != "Asia/Tokyo" {
		t.Fatalf("operator's zone %q, vera's %q", z, stored())
	}

	// The empty choice: the browser's zone again.
	if r := env.SessionPost(t, c, "/settings/timezone", url.Values{"timezone": {""}}); r.StatusCode != http.StatusSeeOther || stored() != "" {
		t.Fatalf("back to the browser's zone: %d, stored %q", r.StatusCode, stored())
	}
	if _, doc := pgGet(t, env, c, "/status"); !regexp.MustCompile(` (EST|EDT)$`).MatchString(doc.Find(`[data-testid="updated-at"]`).Text()) {
		t.Fatalf("status board back on the browser's zone: %q", doc.Find(`[data-testid="updated-at"]`).Text())
	}

	// Signed out, the page sends to sign-in and nothing is written.
	if resp := testkit.GetNoBody(t, env.Anon(), env.URL+"/settings/timezone"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Fatalf("anonymous GET: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// A schedule's times stay in its zone and UTC; a reader whose display zone
// is neither sees them in theirs too (the next-ticks table gets a column),
// and one in the schedule's zone or UTC sees no third time.
func TestScheduleTimesInReadersZone(t *testing.T) {
	t.Parallel()
	env, sched, _ := schedEnv(t)
	evaluateSince(t, sched, 3*time.Hour)
	jst := regexp.MustCompile(`:05 JST`)
	for _, c := range []struct {
		name, zone string
		yours      bool
	}{{"tokyo", "Asia/Tokyo", true}, {"berlin", "Europe/Berlin", false}, {"utc", "UTC", false}} {
		cl := tzUser(t, env, c.name, c.zone)
		_, doc := pgGet(t, env, cl, "/schedules/hourly")
		next := doc.Find(`[data-testid="next-tick-row"]`).First()
		if got := doc.Find(`[data-testid="next-ticks-yours"]`).Length() == 1; got != c.yours || next.Find("td").Length() != map[bool]int{true: 3, false: 2}[c.yours] ||
			jst.MatchString(text(next)) != c.yours || !strings.Contains(text(next), "UTC") || !strings.Contains(text(next), ":05 CE") {
			t.Errorf("%s: next ticks %q (your column %v)", c.name, text(doc.Find(`[data-testid="next-ticks"]`)), got)
		}
		if tick := text(doc.Find(`[data-testid="tick-row"]`).First()); jst.MatchString(tick) != c.yours || !strings.Contains(tick, "UTC") {
			t.Errorf("%s: tick row %q", c.name, tick)
		}
		_, doc = pgGet(t, env, cl, "/automation")
		if nt := text(doc.Find(`[data-testid="schedule-row"][data-name="hourly"] [data-testid="next-tick"]`)); jst.MatchString(nt) != c.yours || !strings.Contains(nt, "UTC") {
			t.Errorf("%s: automation next tick %q", c.name, nt)
		}
	}
}

// A schedule in UTC shows each time once: its next-ticks table has no
// second UTC column repeating the first, and its tick history no second
// line repeating the time above it; a reader elsewhere still gets their
// own zone beside it.
func TestScheduleInUTCShowsEachTimeOnce(t *testing.T) {
	t.Parallel()
	env, sched, _ := schedEnv(t)
	evaluateSince(t, sched, 3*time.Hour) // "regions" (no timezone: UTC) ticks at 03:00
	for _, c := range []struct {
		name, zone string
		heads      string
	}{{"utcreader", "UTC", "UTC"}, {"tokyoreader", "Asia/Tokyo", "UTC|Your time"}} {
		cl := tzUser(t, env, c.name, c.zone)
		_, doc := pgGet(t, env, cl, "/schedules/regions")
		var heads []string
		doc.Find(`[data-testid="next-ticks"] th`).Each(func(_ int, s *goquery.Selection) { heads = append(heads, text(s)) })
		next := doc.Find(`[data-testid="next-tick-row"]`).First()
		if strings.Join(heads, "|") != c.heads || next.Find("td").Length() != len(heads) || strings.Count(text(next), "03:00 UTC") != 1 {
			t.Errorf("%s: next ticks %v: %q", c.name, heads, text(next))
		}
		tick := doc.Find(`[data-testid="tick-row"]`).First()
		if tick.Length() == 0 || strings.Count(text(tick), "03:00 UTC") != 1 || tick.Find("td").First().Find("small").Length() != map[bool]int{true: 1, false: 0}[c.zone != "UTC"] {
			t.Errorf("%s: tick row %q", c.name, text(tick))
		}
	}
}
