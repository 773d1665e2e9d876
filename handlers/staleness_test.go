package handlers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
)

// staleWS: hourly → daily (time window), daily → monthly, daily → daily
// (identity) and daily → static (all partitions), with bounded windows so
// the spaces do not depend on the clock.
var staleWS = testkit.Assets(
	testkit.Asset("up.hourly", `{hourly: {start: "2025-01-01-00:00", end: "2025-01-03-00:00"}}`, "group: ingest", "code_version: v1", "executor: {demo: {duration: 1s}}"),
	testkit.Asset("down.daily", "{daily: {start: 2025-01-01, end: 2025-01-03}}", "group: analytics", "deps: [{asset: up.hourly}]", "code_version: v2", "executor: {demo: {duration: 1s}}"),
	testkit.Asset("down.monthly", "{monthly: {start: 2025-01-01, end: 2025-03-01}}", "group: analytics", "deps: [down.daily]", "code_version: v1", "executor: {demo: {duration: 1s}}"),
	testkit.Asset("same.daily", "{daily: {start: 2025-01-01, end: 2025-01-03}}", "group: analytics", "deps: [{asset: down.daily, mapping: identity}]", "code_version: v1", "executor: {demo: {duration: 1s}}"),
	testkit.Asset("snap.static", "{static: [a, b]}", "group: reports", "deps: [{asset: down.daily, mapping: all}]", "code_version: v1", "freshness: {max_lag: 1h}", "executor: {demo: {duration: 1s}}"),
)

var runSeq atomic.Int64

// T0 is the base time of the staleness fixtures.
var T0 = time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)

// record writes one outcome through the store's ingest path.
func record(t *testing.T, env *testkit.Env, asset, key, status, code string, at time.Time) string {
	t.Helper()
	a := env.WS.Asset(asset)
	sp := a.Scheme.Space(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), nil) // every fixture scheme has an end
	idx, err := sp.Index(key)
	if err != nil {
		t.Fatal(err)
	}
	run := fmt.Sprintf("run-%d", runSeq.Add(1))
	res, err := env.Store.RecordMaterializations(t.Context(), []db.Materialization{{AssetID: env.WS.IDs[asset], AssetKey: asset,
		Partition: key, Idx: idx, Status: status, CodeVersion: code, RunID: run, Source: "test", StartedAt: at.Add(-time.Minute), At: at}}, "test", "", at)
	if err != nil || res.Recorded != 1 {
		t.Fatalf("record %s %s: %v %+v", asset, key, err, res)
	}
	return res.Instances[0]
}

func mat(t *testing.T, env *testkit.Env, asset, key, code string, at time.Time) string {
	return record(t, env, asset, key, db.StatusMaterialized, code, at)
}

type stalenessJSON struct {
	Staleness struct {
		Reason, Evidence   string
		UpstreamAsset      string    `json:"upstream_asset"`
		UpstreamPartition  string    `json:"upstream_partition"`
		CodeVersion        string    `json:"code_version"`
		CurrentCodeVersion string    `json:"current_code_version"`
		TaintReason        string    `json:"taint_reason"`
		Since              time.Time `json:"since"`
	}
}

func reasonOf(t *testing.T, env *testkit.Env, asset, key string) stalenessJSON {
	t.Helper()
	resp, err := env.Get("/api/v1/assets/" + asset + "/staleness?partition=" + url.QueryEscape(key))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("staleness of %s %s: %s", asset, key, resp.Status)
	}
	var s stalenessJSON
	decode(t, resp, &s)
	return s
}

func expectReason(t *testing.T, env *testkit.Env, asset, key, want string, evidence ...string) stalenessJSON {
	t.Helper()
	s := reasonOf(t, env, asset, key)
	if s.Staleness.Reason != want {
		t.Fatalf("%s %s: reason %s (%s), want %s", asset, key, s.Staleness.Reason, s.Staleness.Evidence, want)
	}
	for _, e := range evidence {
		if !strings.Contains(s.Staleness.Evidence, e) {
			t.Fatalf("%s %s: evidence %q does not mention %q", asset, key, s.Staleness.Evidence, e)
		}
	}
	return s
}

func staleEnv(t *testing.T) (*testkit.Env, *time.Time) {
	env := testkit.New(t, testkit.Options{WorkspaceYAML: staleWS})
	now := T0.Add(10 * time.Hour)
	env.Handler.Now = func() time.Time { return now }
	return env, &now
}

// Every reason, with its evidence and precedence, through identity,
// hourly→daily, daily→monthly and all-partitions dependencies.
func TestStalenessReasonsThroughMappings(t *testing.T) {
	env, now := staleEnv(t)
	expectReason(t, env, "down.daily", "2025-01-01", "NEVER_MATERIALIZED", "no attempt")
	record(t, env, "down.daily", "2025-01-01", db.StatusFailed, "v2", T0)
	expectReason(t, env, "down.daily", "2025-01-01", "NEVER_MATERIALIZED", "failed")

	// hourly → daily: a day reads its 24 hours.
	for h := range 24 {
		mat(t, env, "up.hourly", fmt.Sprintf("2025-01-01-%02d:00", h), "v1", T0)
		mat(t, env, "up.hourly", fmt.Sprintf("2025-01-02-%02d:00", h), "v1", T0)
	}
	first := mat(t, env, "down.daily", "2025-01-01", "v2", T0.Add(time.Hour))
	mat(t, env, "down.daily", "2025-01-02", "v1", T0.Add(time.Hour))
	expectReason(t, env, "down.daily", "2025-01-01", "FRESH")
	s := expectReason(t, env, "down.daily", "2025-01-02", "CODE_CHANGED", "v1", "v2")
	if s.Staleness.CodeVersion != "v1" || s.Staleness.CurrentCodeVersion != "v2" {
		t.Fatalf("code evidence %+v", s.Staleness)
	}
	mat(t, env, "up.hourly", "2025-01-01-05:00", "v1", T0.Add(2*time.Hour))
	s = expectReason(t, env, "down.daily", "2025-01-01", "UPSTREAM_CHANGED", "up.hourly partition 2025-01-01-05:00", "2025-02-01 02:00:00 UTC")
	if s.Staleness.UpstreamAsset != "up.hourly" || s.Staleness.UpstreamPartition != "2025-01-01-05:00" || !s.Staleness.Since.Equal(T0.Add(2*time.Hour)) {
		t.Fatalf("upstream evidence %+v", s.Staleness)
	}
	// An upstream hour of another day does not concern 2025-01-01.
	expectReason(t, env, "down.daily", "2025-01-02", "CODE_CHANGED")

	// Taint beats code and upstream.
	resp := env.Post(t, "/api/v1/assets/down.daily/partitions/2025-01-02/taint", `{"reason":"duplicated rows"}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("taint: %s", resp.Status)
	}
	expectReason(t, env, "down.daily", "2025-01-02", "TAINTED", "duplicated rows")
	resp = env.Post(t, "/api/v1/assets/down.daily/partitions/2025-01-01/taint", `{"reason":"late data"}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("taint: %s", resp.Status)
	}
	expectReason(t, env, "down.daily", "2025-01-01", "TAINTED", "late data")

	// daily → monthly: January reads its days.
	mat(t, env, "down.monthly", "2025-01-01", "v1", T0.Add(90*time.Minute))
	expectReason(t, env, "down.monthly", "2025-01-01", "FRESH")
	// The next successful build supersedes the tainted instance.
	second := mat(t, env, "down.daily", "2025-01-01", "v2", T0.Add(3*time.Hour))
	expectReason(t, env, "down.daily", "2025-01-01", "FRESH")
	expectReason(t, env, "down.monthly", "2025-01-01", "UPSTREAM_CHANGED", "down.daily partition 2025-01-01")
	var supersedes string
	if err := env.Store.RawReader().Get(&supersedes, `SELECT supersedes_id FROM partition_instances WHERE id=?`, second); err != nil || supersedes != first {
		t.Fatalf("second instance supersedes %q (%v), want %s", supersedes, err, first)
	}

	// identity: same key.
	mat(t, env, "same.daily", "2025-01-02", "v1", T0.Add(30*time.Minute))
	mat(t, env, "same.daily", "2025-01-01", "v1", T0.Add(5*time.Hour))
	mat(t, env, "down.daily", "2025-01-02", "v2", T0.Add(4*time.Hour))
	expectReason(t, env, "same.daily", "2025-01-02", "UPSTREAM_CHANGED", "down.daily partition 2025-01-02")
	expectReason(t, env, "same.daily", "2025-01-01", "FRESH")

	// all partitions: a static snapshot reads every day; max_lag 1h.
	mat(t, env, "snap.static", "a", "v1", T0.Add(210*time.Minute))
	mat(t, env, "snap.static", "b", "v1", T0.Add(5*time.Hour))
	*now = T0.Add(6 * time.Hour)
	expectReason(t, env, "snap.static", "a", "UPSTREAM_CHANGED", "down.daily partition 2025-01-02")
	expectReason(t, env, "snap.static", "b", "FRESH") // lag exactly 1h
	*now = T0.Add(6*time.Hour + time.Millisecond)
	expectReason(t, env, "snap.static", "b", "FRESHNESS", "at most 1h")

	// The overview's health bar splits materialized into fresh and stale.
	_, doc := get(t, env, "/")
	row := doc.Find(`[data-testid="asset-row"][data-asset="same.daily"]`)
	if !strings.HasSuffix(row.Find(`[data-testid="asset-count-stale"]`).Text(), "1") || !strings.HasSuffix(row.Find(`[data-testid="asset-count-materialized"]`).Text(), "1") {
		t.Fatalf("overview same.daily: %q", row.Find(`.counts`).Text())
	}

	// The asset page's staleness view and the partition page agree.
	code, doc := get(t, env, "/assets/down.daily?view=staleness")
	if code != http.StatusOK {
		t.Fatalf("staleness view: %d", code)
	}
	panel := doc.Find(`[data-testid="stale-panel"]`)
	if panel.Find(`[data-testid="count-FRESH"]`).Text() != "2" || panel.Find(`[data-testid="count-TAINTED"]`).Text() != "0" || panel.Find(`[data-testid="count-NEVER_MATERIALIZED"]`).Text() != "0" {
		t.Fatalf("panel counts: %q", panel.Text())
	}
	// Both partitions fresh: nothing to backfill, so no shortcut (it led to
	// an empty selection).
	if n := panel.Find(`[data-testid="backfill-stale"], [data-testid="backfill-missing-stale"]`).Length(); n != 0 {
		t.Fatalf("%d backfill shortcuts with nothing stale", n)
	}
	tiles := doc.Find(`[data-testid="grid"] a.t`)
	if tiles.Length() != 2 || !strings.Contains(tiles.First().AttrOr("class", ""), "z-ok") {
		t.Fatalf("staleness tiles: %d %q", tiles.Length(), tiles.First().AttrOr("class", ""))
	}
	// Filtering by a reason dims the other tiles.
	_, doc = get(t, env, "/assets/same.daily?view=staleness&status=UPSTREAM_CHANGED")
	if doc.Find(`[data-testid="grid"] a.dim`).Length() != 1 || doc.Find(`select[name="status"] option[value="UPSTREAM_CHANGED"][selected]`).Length() != 1 {
		t.Fatal("reason filter")
	}
	if code, _ := get(t, env, "/assets/same.daily?view=staleness&status=STALE_ISH"); code != http.StatusBadRequest {
		t.Fatalf("unknown reason: %d", code)
	}
	_, doc = get(t, env, "/assets/down.monthly/partitions/2025-01-01")
	if r := doc.Find(`[data-testid="stale-reason"]`).AttrOr("data-reason", ""); r != "UPSTREAM_CHANGED" {
		t.Fatalf("partition page reason %q", r)
	}
	// The evidence names the newest upstream build: 2025-01-02 at 04:00.
	if e := doc.Find(`[data-testid="stale-evidence"]`).Text(); !strings.Contains(e, "down.daily partition 2025-01-02 was materialized at 2025-02-01 04:00:00 UTC") {
		t.Fatalf("partition page evidence %q", e)
	}
	up := doc.Find(`[data-testid="upstream"] [data-testid="dep"][data-asset="down.daily"]`)
	if up.Find(`[data-testid="dep-partition"]`).Length() != 2 {
		t.Fatalf("upstream partitions of January: %q", up.Text())
	}
	_, doc = get(t, env, "/assets/up.hourly/partitions/2025-01-01-05:00")
	down := doc.Find(`[data-testid="downstream"] [data-testid="dep"][data-asset="down.daily"] [data-testid="dep-partition"]`)
	if down.Length() != 1 || down.Text() == "" || !strings.Contains(down.AttrOr("href", ""), "2025-01-01") {
		t.Fatalf("downstream of an hour: %d %q", down.Length(), down.AttrOr("href", ""))
	}
}

func TestTaintFormsAndBadInput(t *testing.T) {
	env, _ := staleEnv(t)
	mat(t, env, "down.daily", "2025-01-01", "v2", T0)
	count := func() (taints, events int) {
		env.Store.RawReader().Get(&taints, `SELECT COUNT(*) FROM partition_taints`)
		env.Store.RawReader().Get(&events, `SELECT COUNT(*) FROM events`)
		return
	}
	path := "/assets/down.daily/partitions/2025-01-01/taint"
	admin := env.Client(t, auth.RoleAdmin)
	operator := env.Client(t, auth.RoleOperator)
	opTok := env.Token(t, auth.RoleOperator)
	env.AdminToken()
	t0, e0 := count()
	resp := env.SessionPost(t, admin, path, url.Values{"reason": {"   "}})
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("taint without reason: %s", resp.Status)
	}
	resp = env.SessionPost(t, operator, path, url.Values{"reason": {"bad"}})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("taint by an operator: %s", resp.Status)
	}
	resp = env.BearerDo(t, http.MethodPost, "/api/v1"+path, opTok, "application/json", `{"reason":"bad"}`)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("API taint by an operator: %s", resp.Status)
	}
	resp = env.Post(t, "/api/v1/assets/down.daily/partitions/2025-01-02/taint", `{"reason":"never built"}`)
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("taint of a never materialized partition: %s", resp.Status)
	}
	resp = env.Post(t, "/api/v1"+path, `{"reason":""}`)
	var e apiError
	decode(t, resp, &e)
	if resp.StatusCode != http.StatusBadRequest || e.Error.Field != "reason" || !strings.Contains(e.Error.Message, "reason") {
		t.Fatalf("API taint without reason: %s %+v", resp.Status, e)
	}
	if t1, e1 := count(); t1 != t0 || e1 != e0 {
		t.Fatalf("bad taints wrote %d taints, %d events", t1-t0, e1-e0)
	}

	// A partition without data offers the admin no Taint form, which
	// could only answer 409: never attempted, nor once its attempt failed.
	for _, fail := range []bool{false, true} {
		if fail {
			record(t, env, "down.daily", "2025-01-02", db.StatusFailed, "v2", T0)
		}
		if _, doc := get(t, env, "/assets/down.daily/partitions/2025-01-02"); doc.Find(`[data-testid="taint-actions"]`).Length() != 0 {
			t.Errorf("never materialized (failed: %v): the admin is offered %q", fail, doc.Find(`[data-testid="taint-actions"]`).Text())
		}
	}

	// The admin's form: taint, then clear.
	_, doc := get(t, env, "/assets/down.daily/partitions/2025-01-01")
	if doc.Find(`[data-testid="taint-form"] input[name="_csrf"]`).Length() != 1 {
		t.Fatal("no taint form with a CSRF field for the admin")
	}
	resp = env.SessionPost(t, admin, path, url.Values{"reason": {"duplicated rows"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("taint: %s", resp.Status)
	}
	_, doc = get(t, env, "/assets/down.daily/partitions/2025-01-01")
	if !strings.Contains(doc.Find(`[data-testid="tainted"]`).Text(), "duplicated rows") || doc.Find(`[data-testid="clear-taint-form"]`).Length() != 1 ||
		doc.Find(`[data-testid="stale-reason"]`).AttrOr("data-reason", "") != "TAINTED" || doc.Find(`[data-testid="taint-row"]`).Length() != 1 {
		t.Fatal("tainted partition page")
	}
	// The canonical instance stays visible.
	if doc.Find(`[data-testid="instance"].canonical`).Length() != 1 {
		t.Fatal("the tainted instance is no longer shown as current")
	}
	// A viewer sees no taint form.
	viewer := env.Client(t, auth.RoleViewer)
	vr, err := viewer.Get(env.URL + "/assets/down.daily/partitions/2025-01-01")
	if err != nil {
		t.Fatal(err)
	}
	defer vr.Body.Close()
	var b strings.Builder
	buf := make([]byte, 1<<16)
	for {
		n, err := vr.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if strings.Contains(b.String(), `data-testid="clear-taint-form"`) || strings.Contains(b.String(), `data-testid="taint-form"`) {
		t.Fatal("a viewer is offered taint actions")
	}
	resp = env.SessionPost(t, admin, "/assets/down.daily/partitions/2025-01-01/clear-taint", nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("clear taint: %s", resp.Status)
	}
	expectReason(t, env, "down.daily", "2025-01-01", "FRESH") // no upstream hour is materialized
}

func TestHistoryAtTime(t *testing.T) {
	env, _ := staleEnv(t)
	first := mat(t, env, "down.daily", "2025-01-01", "v1", T0.Add(time.Hour))
	second := mat(t, env, "down.daily", "2025-01-01", "v2", T0.Add(3*time.Hour))
	at := func(q string) (int, map[string]any) {
		resp, err := env.Get("/api/v1/assets/down.daily/partitions/2025-01-01/history?at=" + url.QueryEscape(q))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		decode(t, resp, &m)
		return resp.StatusCode, m
	}
	id := func(m map[string]any) string {
		if inst, ok := m["instance"].(map[string]any); ok {
			return inst["id"].(string)
		}
		return ""
	}
	if code, m := at("2025-02-01T02:00:00Z"); code != 200 || id(m) != first {
		t.Fatalf("at 02:00: %d %v, want %s", code, m, first)
	}
	if code, m := at("2025-02-01 03:30"); code != 200 || id(m) != second || m["instance"].(map[string]any)["supersedes_id"] != first {
		t.Fatalf("at 03:30: %d %v", code, m)
	}
	if code, m := at("2025-01-31"); code != 200 || id(m) != "" || m["message"] == nil {
		t.Fatalf("before any instance: %d %v", code, m)
	}
	code, m := at("yesterday-ish")
	if code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(m), "RFC 3339") {
		t.Fatalf("unparseable at: %d %v", code, m)
	}
	for _, q := range []string{"253402300800000", "9223372036854775807"} { // past the year 9999
		if code, m := at(q); code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(m), "out of range") {
			t.Errorf("at=%s: %d %v, want 400 out of range", q, code, m)
		}
	}
	// Taint history at a time.
	env.Post(t, "/api/v1/assets/down.daily/partitions/2025-01-01/taint", `{"reason":"bad"}`)
	if _, m := at("2025-02-01T11:00:00Z"); m["tainted"] != true || m["taint_reason"] != "bad" {
		t.Fatalf("tainted at 11:00: %v", m)
	}
	if _, m := at("2025-02-01T09:00:00Z"); m["tainted"] != false {
		t.Fatalf("not yet tainted at 09:00: %v", m)
	}
}

// "by 09:00 Europe/Berlin": yesterday's partition built before its day
// ended is fresh until 09:00 Berlin the next day, FRESHNESS from then on; a
// partition built after its day ended meets the deadline.
func TestFreshnessDeadlineThroughTheAPI(t *testing.T) {
	t.Parallel()
	env := testkit.WithAssets(t,
		testkit.Asset("d.berlin", "{daily: {start: 2025-01-14, end: 2025-01-17, timezone: Europe/Berlin}}", `freshness: {by: "09:00", timezone: Europe/Berlin}`, "executor: {demo: {duration: 1s}}"),
	)
	berlin, _ := time.LoadLocation("Europe/Berlin")
	now := time.Date(2025, 1, 16, 8, 59, 59, 999e6, berlin)
	env.Handler.Now = func() time.Time { return now }
	mat(t, env, "d.berlin", "2025-01-15", "", time.Date(2025, 1, 15, 22, 0, 0, 0, berlin)) // before its day ended
	mat(t, env, "d.berlin", "2025-01-14", "", time.Date(2025, 1, 15, 1, 0, 0, 0, berlin))  // after its day ended
	expectReason(t, env, "d.berlin", "2025-01-15", "FRESH")
	now = time.Date(2025, 1, 16, 9, 0, 0, 0, berlin)
	s := expectReason(t, env, "d.berlin", "2025-01-15", "FRESHNESS", "09:00 Europe/Berlin")
	if !s.Staleness.Since.Equal(now) {
		t.Fatalf("stale since %v, want %v", s.Staleness.Since, now)
	}
	expectReason(t, env, "d.berlin", "2025-01-14", "FRESH")
}

// Every asset of the default workspace renders its staleness view, with and
// without history (empty dynamic sets, multi-dimensional, static).
func TestStalenessViewOfEveryDefaultAsset(t *testing.T) {
	testkit.SkipInRacePass(t) // renders the seeded demo, request after request
	t.Parallel()
	for _, seed := range []bool{false, true} {
		env := testkit.New(t, testkit.Options{Seed: seed})
		for _, a := range env.WS.Assets {
			code, doc := get(t, env, "/assets/"+a.Key+"?view=staleness")
			if code != http.StatusOK || doc.Find(`[data-testid="stale-panel"]`).Length() != 1 {
				t.Fatalf("seed %v: %s staleness view: %d", seed, a.Key, code)
			}
			resp, err := env.Get("/api/v1/assets/" + a.Key + "/gaps")
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("seed %v: %s gaps: %v %v", seed, a.Key, resp.Status, err)
			}
			resp.Body.Close()
		}
		if code, _ := get(t, env, "/status"); code != http.StatusOK {
			t.Fatalf("seed %v: status board %d", seed, code)
		}
	}
}

// The asset page words every part of a freshness policy with the deadline's
// timezone (before, a by-deadline read "previous day's partition by 09:00"
// even on a monthly asset, without its timezone, and a policy with both
// parts showed only its max lag); and the stored definition changes when
// the timezone does, so the change is versioned.
func TestFreshnessPolicyWording(t *testing.T) {
	t.Parallel()
	ws := `assets:
  m.monthly:
    partitions: {monthly: {start: 2025-01-01}}
    freshness: {by: "09:00", timezone: %s}
    executor: {demo: {duration: 1s}}
  m.both:
    partitions: {daily: {start: 2025-01-01}}
    freshness: {max_lag: 26h, by: "06:30"}
    executor: {demo: {duration: 1s}}
`
	env := testkit.New(t, testkit.Options{WorkspaceYAML: fmt.Sprintf(ws, "Europe/Berlin")})
	for key, want := range map[string]string{
		"m.monthly": "each window built by 09:00 Europe/Berlin after it ends",
		"m.both":    "at most 26h behind; each window built by 06:30 UTC after it ends",
	} {
		code, doc := get(t, env, "/assets/"+key)
		if got := doc.Find(`[data-testid="freshness-policy"]`).Text(); code != http.StatusOK || got != want {
			t.Errorf("%s: %d %q, want %q", key, code, got, want)
		}
	}
	version := func() int64 {
		t.Helper()
		a, err := env.Store.AssetByKey(t.Context(), "m.monthly")
		if err != nil {
			t.Fatal(err)
		}
		return a.DefinitionVersion
	}
	before := version()
	next, err := catalog.ParseWorkspace("ws.yaml", []byte(fmt.Sprintf(ws, "America/New_York")))
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Store.SyncWorkspace(t.Context(), next, "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	if after := version(); after != before+1 {
		t.Fatalf("definition version %d after the deadline's timezone changed, want %d", after, before+1)
	}
}

// A taint reason is checked in characters, and control characters other
// than line breaks are refused; a refused taint writes nothing.
func TestTaintReasonText(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: statusWS})
	mat(t, env, "s.static", "a", "v2", T0)
	const path = "/api/v1/assets/s.static/partitions/a/taint"
	body := func(reason string) string {
		b, _ := json.Marshal(map[string]string{"reason": reason})
		return string(b)
	}
	for _, c := range []struct{ name, reason, msg string }{
		{"empty", "  ", "a taint needs a reason"},
		{"too long", strings.Repeat("x", 501), "at most 500 characters (got 501)"},
		{"terminal escape", "bad \x1b[31mrows", "control character (U+001B at byte 4)"},
		{"NUL", "bad\x00rows", "control character (U+0000 at byte 3)"},
	} {
		resp := env.Post(t, path, body(c.reason))
		var v struct {
			Error struct{ Message, Field string }
		}
		json.NewDecoder(resp.Body).Decode(&v)
		if resp.StatusCode != 400 || v.Error.Field != "reason" || !strings.Contains(v.Error.Message, c.msg) {
			t.Errorf("%s: %d %+v, want 400 on reason saying %q", c.name, resp.StatusCode, v.Error, c.msg)
		}
		a, err := env.Store.AssetByKey(t.Context(), "s.static")
		if err != nil {
			t.Fatal(err)
		}
		p, err := env.Store.Partition(t.Context(), a.ID, "a")
		if err != nil || p.TaintedAt != nil {
			t.Fatalf("%s: the refused taint wrote: %+v %v", c.name, p, err)
		}
	}
	// 300 accented letters on two lines (as a browser sends a textarea's,
	// \r\n) are 300 characters: accepted.
	if resp := env.Post(t, path, body(strings.Repeat("é", 149)+"\r\n"+strings.Repeat("é", 149))); resp.StatusCode != 200 {
		t.Fatalf("a 300-character reason on two lines: %d", resp.StatusCode)
	}
}

var staleShortcutsWS = testkit.Assets(
	testkit.Asset("sc.never", "{static: [a, b, c]}", "code_version: v1", "executor: {demo: {duration: 1s}}"),
	testkit.Asset("sc.code", "{static: [a, b, c]}", "code_version: v2", "executor: {demo: {duration: 1s}}"),
	testkit.Asset("sc.fresh", "{static: [a, b, c]}", "code_version: v1", "executor: {demo: {duration: 1s}}"),
)

// TestStaleShortcutsOnlyWhenSomethingToDo: the staleness panel offers
// "Backfill stale" only when a materialized partition is stale (never
// materialized ones are not "stale" for that selection, which was empty
// and refused at launch), saying why when it is left out, and offers
// nothing when every partition is fresh.
func TestStaleShortcutsOnlyWhenSomethingToDo(t *testing.T) {
	t.Parallel()
	env, _ := pgEnvWith(t, staleShortcutsWS, false)
	mat(t, env, "sc.never", "a", "v1", T0) // b and c never materialized
	for _, k := range []string{"a", "b", "c"} {
		mat(t, env, "sc.code", k, "v1", T0) // built with v1, the code is at v2
		mat(t, env, "sc.fresh", k, "v1", T0)
	}
	op := env.Client(t, auth.RoleOperator)
	for _, c := range []struct {
		asset                string
		stale, missing, none bool
	}{
		{"sc.never", false, true, true},
		{"sc.code", true, true, false},
		{"sc.fresh", false, false, false},
	} {
		code, doc := pgGet(t, env, op, "/assets/"+c.asset+"?view=staleness")
		if code != http.StatusOK {
			t.Fatalf("%s: %d", c.asset, code)
		}
		panel := doc.Find(`[data-testid="stale-panel"]`)
		has := func(id string) bool { return panel.Find(`[data-testid="`+id+`"]`).Length() == 1 }
		if has("backfill-stale") != c.stale || has("backfill-missing-stale") != c.missing || has("backfill-stale-none") != c.none {
			t.Errorf("%s: backfill-stale %v (want %v), backfill-missing-stale %v (want %v), reason %v (want %v): %q", c.asset,
				has("backfill-stale"), c.stale, has("backfill-missing-stale"), c.missing, has("backfill-stale-none"), c.none, squash(panel.Text()))
		}
		// What is offered previews a selection that is not empty.
		for _, id := range []string{"backfill-stale", "backfill-missing-stale"} {
			href, ok := panel.Find(`[data-testid="` + id + `"]`).Attr("href")
			if !ok {
				continue
			}
			_, form := pgGet(t, env, op, href)
			if n := form.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n == "" || n == "0" {
				t.Errorf("%s %s previews %q partitions: %q", c.asset, id, n, squash(form.Find(`.field-error, [data-testid="preview"]`).Text()))
			}
		}
	}
	// Viewers get no shortcut and no reason.
	_, doc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/assets/sc.never?view=staleness")
	if doc.Find(`[data-testid="backfill-missing-stale"], [data-testid="backfill-stale-none"]`).Length() != 0 {
		t.Error("viewer sees backfill shortcuts")
	}
}
