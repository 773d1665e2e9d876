package handlers_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/testkit"
)

// Every status or reason class a page draws (bars, legend and count chips)
// is defined by a stylesheet that page loads: the overview's stale segment
// was solid black because .z-stale lived only in staleness.css.
func TestPagesLoadTheStylesOfTheirStatuses(t *testing.T) {
	env := seededEnv(t)
	css := map[string]string{}
	for _, path := range []string{"/", "/assets/analytics.daily_events", "/assets/ml.features?view=staleness", "/status"} {
		_, doc := get(t, env, path)
		var loaded strings.Builder
		doc.Find(`link[rel="stylesheet"]`).Each(func(_ int, l *goquery.Selection) {
			href := l.AttrOr("href", "")
			if _, ok := css[href]; !ok {
				_, css[href] = okText(t, env, env.Anon(), href)
			}
			loaded.WriteString(css[href])
		})
		seen := map[string]bool{}
		doc.Find(`[data-testid="health-bar"] rect, .sw, .chip, .t`).Each(func(_ int, s *goquery.Selection) {
			for _, cls := range strings.Fields(s.AttrOr("class", "")) {
				if !strings.HasPrefix(cls, "s-") && !strings.HasPrefix(cls, "z-") || seen[cls] {
					continue
				}
				seen[cls] = true
				if !regexp.MustCompile(`\.` + regexp.QuoteMeta(cls) + `[^\w-]`).MatchString(loaded.String()) {
					t.Errorf("%s draws class %s, which none of its stylesheets defines", path, cls)
				}
			}
		})
		if path == "/" && !seen["z-stale"] {
			t.Fatalf("the overview draws no stale segment: the test needs one")
		}
	}
}

// Viewers cannot launch backfills, so the asset page offers them no
// "Backfill…" selection and no "Backfill stale" shortcuts; operators get both.
func TestAssetPageBackfillControlsNeedOperator(t *testing.T) {
	env := seededEnv(t)
	for _, c := range []struct {
		role auth.Role
		want int
	}{{auth.RoleViewer, 0}, {auth.RoleOperator, 1}} {
		cl := env.Client(t, c.role)
		_, doc := pgGet(t, env, cl, "/assets/raw.events")
		if n := doc.Find(`[data-testid="backfill-selection"]`).Length(); n != c.want {
			t.Errorf("%s sees %d Backfill… buttons, want %d", c.role, n, c.want)
		}
		_, doc = pgGet(t, env, cl, "/assets/analytics.daily_events?view=staleness")
		if n := doc.Find(`[data-testid="backfill-stale"]`).Length(); n != c.want {
			t.Errorf("%s sees %d Backfill stale buttons, want %d", c.role, n, c.want)
		}
	}
}

// The sign-in page shows no nav to pages that need a sign-in; in
// anonymous-viewer mode the pages are readable and the nav is there.
func TestSignInPageHasNoNav(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	_, doc := pgGet(t, env, env.Anon(), "/login")
	if n := doc.Find(`nav[aria-label="Main"]`).Length(); n != 0 {
		t.Fatalf("sign-in page shows the main nav")
	}
	cfg := handlers.AuthConfig{LoginLimit: handlers.DefaultLoginLimit, FailureDelay: -1, AnonymousViewer: true}
	anon := testkit.New(t, testkit.Options{Auth: &cfg})
	if _, doc := pgGet(t, anon, anon.Anon(), "/"); doc.Find(`nav[aria-label="Main"] a[href="/status"]`).Length() != 1 {
		t.Fatalf("anonymous-viewer overview has no nav")
	}
}

// A range of one partition names its key once.
func TestOnePartitionNamedOnce(t *testing.T) {
	env := seededEnv(t)
	_, doc := get(t, env, "/assets/raw.events/partitions/2025-01-01-00:00")
	got := strings.TrimSpace(doc.Find(`[data-asset="analytics.daily_events"] [data-testid="dep-summary"]`).Text())
	if got != "1 partition: 2025-01-01" {
		t.Fatalf("downstream summary %q, want %q", got, "1 partition: 2025-01-01")
	}
	_, doc = get(t, env, "/assets/analytics.daily_events?from=2025-01-01&to=2025-01-01")
	if got := strings.TrimSpace(doc.Find(`#detail-h`).Text()); got != "2025-01-01 (1 partition)" {
		t.Fatalf("window label %q", got)
	}
}

// The gaps page loads the stylesheet of its warning: "no watermark" showed
// as plain text there (.warn lives in staleness.css, which only the asset
// page's staleness view loaded), while the same list on that view drew it
// as a warning.
func TestGapsPageLoadsItsWarningStyle(t *testing.T) {
	env := seededEnv(t)
	_, doc := get(t, env, "/assets/crm.accounts_snapshot/gaps")
	warn := doc.Find(`[data-testid="gaps-warning"]`)
	if warn.Length() != 1 || !warn.HasClass("warn") {
		t.Fatalf("no warning with class warn: %q", doc.Find("main").Text())
	}
	var loaded strings.Builder
	doc.Find(`link[rel="stylesheet"]`).Each(func(_ int, l *goquery.Selection) {
		_, css := okText(t, env, env.Anon(), l.AttrOr("href", ""))
		loaded.WriteString(css)
	})
	if !regexp.MustCompile(`(^|[^\w-])\.warn[^\w-]`).MatchString(loaded.String()) {
		t.Error("the gaps page loads no stylesheet defining .warn")
	}
}
