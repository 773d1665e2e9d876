package handlers_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/testkit"
)

func bigHourly(n int) string {
	start := time.Now().UTC().Truncate(time.Hour).Add(-time.Duration(n) * time.Hour)
	return fmt.Sprintf(`assets:
  big.hourly:
    partitions: {hourly: {start: %q}}
    code_version: v1
    executor: {demo: {duration: 1s}}
`, start.Format("2006-01-02-15:04"))
}

func TestOverviewListsEveryAssetWithHealth(t *testing.T) {
	env := seededEnv(t)
	status, doc := get(t, env, "/")
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	rows := doc.Find(`[data-testid="asset-row"]`)
	if rows.Length() != len(env.WS.Assets) {
		t.Fatalf("%d asset rows, want %d", rows.Length(), len(env.WS.Assets))
	}
	for _, a := range env.WS.Assets {
		row := doc.Find(`[data-testid="asset-row"][data-asset="` + a.Key + `"]`)
		if row.Length() != 1 || row.Find(`[data-testid="health-bar"]`).Length() != 1 {
			t.Fatalf("asset %s has no row with a health bar", a.Key)
		}
		if row.Find(`a`).First().AttrOr("href", "") != "/assets/"+a.Key {
			t.Fatalf("asset %s does not link to its page", a.Key)
		}
	}
	// Missing is the scheme's size minus the partitions with a status row.
	var stored int
	if err := env.Store.RawReader().Get(&stored, `SELECT COUNT(*) FROM partition_status WHERE asset_id=?`, env.WS.IDs["crm.accounts_snapshot"]); err != nil {
		t.Fatal(err)
	}
	row := doc.Find(`[data-asset="crm.accounts_snapshot"]`)
	want := fmt.Sprint(8 - stored)
	if got := strings.TrimSpace(row.Find(`[data-testid="asset-count-missing"]`).Text()); !strings.HasSuffix(got, want) || stored == 0 {
		t.Fatalf("crm.accounts_snapshot missing count %q, want %s", got, want)
	}
}

// The status view draws stale materialized partitions as stale, in its
// tiles and its strip, as its header counts them: the seeded ml.features
// is mostly stale (its code version changed), and before, its grid was all
// green under a header saying 81% stale.
func TestAssetStatusViewDrawsStalePartitions(t *testing.T) {
	env := seededEnv(t)
	_, doc := get(t, env, "/assets/ml.features")
	header, _ := strconv.Atoi(strings.ReplaceAll(doc.Find(`[data-testid="count-stale"]`).Text(), ",", ""))
	tiles := doc.Find(`[data-testid="grid"] a`)
	stale := doc.Find(`[data-testid="grid"] a.z-stale`).Length()
	if header == 0 || stale == 0 {
		t.Fatalf("header counts %d stale, grid draws %d of %d tiles stale", header, stale, tiles.Length())
	}
	if doc.Find(`[data-testid="history"] .z-stale`).Length() == 0 {
		t.Error("the strip of all partitions draws no stale segment")
	}
	// Filtering on materialized keeps stale tiles (they are materialized).
	_, doc = get(t, env, "/assets/ml.features?status=materialized")
	if n := doc.Find(`[data-testid="grid"] a.z-stale.dim`).Length(); n != 0 {
		t.Errorf("%d stale tiles dimmed under the materialized filter", n)
	}
}

func TestAssetPageCalendarMatrixAndList(t *testing.T) {
	env := seededEnv(t)
	cases := []struct {
		asset, mode string
		columns     int
	}{
		{"raw.events", "calendar", 24},
		{"analytics.daily_events", "calendar", 31},
		{"analytics.monthly_revenue", "calendar", 12},
		{"ml.features", "matrix", 62}, // two months across, a row per region
		{"crm.accounts_snapshot", "list", 0},
		{"partners.feeds", "list", 0},
	}
	for _, tc := range cases {
		t.Run(tc.asset, func(t *testing.T) {
			status, doc := get(t, env, "/assets/"+tc.asset)
			if status != http.StatusOK {
				t.Fatalf("status %d", status)
			}
			grid := doc.Find(`[data-testid="grid"]`)
			if mode := grid.AttrOr("data-mode", ""); mode != tc.mode {
				t.Fatalf("grid mode %q, want %q", mode, tc.mode)
			}
			tiles := grid.Find("a")
			if tiles.Length() == 0 || tiles.Length() > 1000 {
				t.Fatalf("%d tiles", tiles.Length())
			}
			if tc.columns > 0 {
				if n := grid.Find(`[data-testid="grid-head"] span`).Length() - 1; n != tc.columns {
					t.Fatalf("%d column labels, want %d", n, tc.columns)
				}
			}
			if tc.mode == "matrix" {
				var rows []string
				grid.Find(".gr:not(.gh) .rl").Each(func(_ int, s *goquery.Selection) { rows = append(rows, s.Text()) })
				if strings.Join(rows, ",") != "eu,us,apac" || grid.Find(`[data-testid="grid-groups"] span:not(.rl)`).Length() < 2 {
					t.Fatalf("matrix rows %v (want a row per region), groups %d", rows, grid.Find(`[data-testid="grid-groups"] span`).Length())
				}
			}
			// Every tile has a status class, a tooltip naming its key, and links to its partition.
			tiles.Each(func(_ int, s *goquery.Selection) {
				href, title := s.AttrOr("href", ""), s.AttrOr("title", "")
				if !strings.HasPrefix(href, "/assets/"+tc.asset+"/partitions/") || title == "" {
					t.Fatalf("tile href %q title %q", href, title)
				}
				class := s.AttrOr("class", "")
				if !strings.Contains(class, "s-") && !strings.Contains(class, "z-stale") {
					t.Fatalf("tile without status class: %q", class)
				}
				// A materialized partition that is stale is drawn as stale
				// (like the header's bar counts it), its reason in its title.
				if strings.Contains(class, "z-stale") != strings.Contains(title, " · stale: ") {
					t.Fatalf("tile %q titled %q", class, title)
				}
			})
			// The four statuses, materialized split into fresh and stale.
			if doc.Find(`[data-testid="legend"] li`).Length() != 5 || doc.Find(`[data-testid="count-stale"]`).Length() != 1 {
				t.Fatal("legend does not list the four statuses and the stale segment")
			}
		})
	}
}

func TestAssetPageMillionPartitionsIsBucketed(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: bigHourly(1_000_000)})
	status, doc := get(t, env, "/assets/big.hourly")
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	hist := doc.Find(`[data-testid="history"]`)
	if hist.AttrOr("data-mode", "") != "buckets" {
		t.Fatal("no bucketed history strip for a million partitions")
	}
	if n := hist.Find("a").Length(); n == 0 || n > 200 {
		t.Fatalf("%d bucket runs", n)
	}
	if !strings.Contains(doc.Find(`[data-testid="history-caption"]`).Text(), "1,000,000 partitions") {
		t.Fatalf("caption %q", doc.Find(`[data-testid="history-caption"]`).Text())
	}
	if n := doc.Find(`[data-testid="grid"] a`).Length(); n > 1000 {
		t.Fatalf("%d tiles drawn", n)
	}
	// Zoom: a bucket's link opens a range; a range of a day shows tiles.
	href, _ := hist.Find("a").First().Attr("href")
	if status, _ := get(t, env, "/assets/big.hourly"+href); status != http.StatusOK {
		t.Fatalf("zoom %s: %d", href, status)
	}
	_, doc = get(t, env, "/assets/big.hourly?from=1800-01-01-00:00&to=1800-01-01-23:00")
	if doc.Find(`[data-testid="range-error"]`).Length() != 1 {
		t.Fatal("a range before the first partition shows no error")
	}
}

func TestAssetPageZoomAndFilter(t *testing.T) {
	env := seededEnv(t)
	_, doc := get(t, env, "/assets/raw.events?from=2025-03-01-00:00&to=2025-03-02-23:00&status=failed")
	grid := doc.Find(`[data-testid="grid"]`)
	if grid.Find("a").Length() != 48 {
		t.Fatalf("%d tiles for two days", grid.Find("a").Length())
	}
	if grid.Find(".gr").Length() != 3 { // header + two days
		t.Fatalf("%d rows", grid.Find(".gr").Length())
	}
	grid.Find("a").Each(func(_ int, s *goquery.Selection) {
		failed := strings.Contains(s.AttrOr("class", ""), "s-f")
		dim := strings.Contains(s.AttrOr("class", ""), "dim")
		if failed == dim {
			t.Fatalf("filter failed: tile %q dim=%v", s.AttrOr("title", ""), dim)
		}
	})
	if doc.Find(`[data-testid="prev"]`).Length() != 1 || doc.Find(`[data-testid="next"]`).Length() != 1 || doc.Find(`[data-testid="zoom-out"]`).Length() != 1 {
		t.Fatal("window navigation missing")
	}
	if status, _ := get(t, env, "/assets/raw.events?status=bogus"); status != http.StatusBadRequest {
		t.Fatalf("unknown status filter answered %d", status)
	}
}

func TestPartitionPageShowsMaterializationAttemptAndHistory(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	body := `[{"asset":"analytics.daily_events","partition":"2025-02-03","status":"materialized","run_id":"run-1","at":"2025-02-04T01:00:00Z","metadata":{"rows":10}},
	          {"asset":"analytics.daily_events","partition":"2025-02-03","status":"failed","run_id":"run-2","at":"2025-02-05T01:00:00Z","error":"boom"}]`
	if resp := env.Post(t, "/api/v1/materializations", body); resp.StatusCode != http.StatusCreated {
		t.Fatalf("report: %d %s", resp.StatusCode, readBody(t, resp))
	}
	status, doc := get(t, env, "/assets/analytics.daily_events/partitions/2025-02-03")
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	// Its data (run-1) is still there: it reads fresh, and says that its
	// last attempt failed, instead of "Failed" beside "Fresh".
	if got := doc.Find(`[data-testid="partition-status"]`).Text(); !strings.Contains(got, "Materialized, fresh") || strings.Contains(got, "Failed") {
		t.Fatalf("status %q", got)
	}
	if got := doc.Find(`[data-testid="partition-last-failed"]`).Text(); got != "last attempt failed" {
		t.Fatalf("last attempt failed note %q", got)
	}
	if !strings.Contains(doc.Find(`[data-testid="last-materialization"]`).Text(), "run-1") {
		t.Fatal("last materialization does not show run-1")
	}
	if !strings.Contains(doc.Find(`[data-testid="last-attempt"]`).Text(), "boom") {
		t.Fatal("last attempt does not show its error")
	}
	inst := doc.Find(`[data-testid="instance"]`)
	if inst.Length() != 2 || !strings.Contains(inst.First().Text(), "run-2") {
		t.Fatalf("instances newest first: %q", inst.Text())
	}
	// A partition never attempted is a page too, marked missing.
	_, doc = get(t, env, "/assets/analytics.daily_events/partitions/2025-02-04")
	if got := doc.Find(`[data-testid="partition-status"]`).Text(); !strings.Contains(got, "Missing") {
		t.Fatalf("never attempted partition status %q", got)
	}
}

func TestUnknownAssetOrPartitionIs404(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	for _, p := range []string{"/assets/nope", "/assets/nope/partitions/x", "/assets/raw.events/partitions/2025-01-01", "/assets/raw.events/partitions/1999-01-01-00:00"} {
		status, doc := get(t, env, p)
		if status != http.StatusNotFound || doc.Find(`[data-testid="error-message"]`).Text() == "" {
			t.Fatalf("GET %s: %d %q", p, status, doc.Find(`[data-testid="error-message"]`).Text())
		}
	}
}
