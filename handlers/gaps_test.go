package handlers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/testkit"
)

const gapsWS = `assets:
  gaps.daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    executor: {demo: {duration: 1s}}
  gaps.multi:
    partitions:
      multi:
        date: {daily: {start: 2025-01-01, end: 2025-01-06}}
        region: {static: [eu, us]}
    executor: {demo: {duration: 1s}}
`

type gapsJSON struct {
	Mode, Watermark, Warning, Note string
	Skipped                        bool
	Total                          int64
	Ranges                         []struct {
		Start, End string
		Count      int64
	}
}

func gapsOf(t *testing.T, env *testkit.Env, asset, from string) (int, gapsJSON, apiError) {
	t.Helper()
	path := "/api/v1/assets/" + asset + "/gaps"
	if from != "" {
		path += "?from=" + from
	}
	resp, b := env.GetBody(t, path)
	var g gapsJSON
	var e apiError
	if resp.StatusCode == http.StatusOK {
		decodeBytes(t, b, &g)
	} else {
		decodeBytes(t, b, &e)
	}
	return resp.StatusCode, g, e
}

func rangesString(g gapsJSON) string {
	var parts []string
	for _, r := range g.Ranges {
		parts = append(parts, r.Start+".."+r.End+"="+itoa64(r.Count))
	}
	return strings.Join(parts, " ")
}

var gapsPagingWS = testkit.Assets(
	testkit.Asset("gp.daily", "{daily: {start: 2024-01-01, end: 2025-12-31}}", "executor: {demo: {duration: 1s}}"),
)

// gapsPagingEnv materializes every other day of 2024-01-01 … 2024-12-31 of
// gp.daily (the first and the last included) and sets the watermark at
// the last: 182 one-day holes inside the materialized range.
func gapsPagingEnv(t *testing.T) (*testkit.Env, []string) {
	t.Helper()
	env, _ := pgEnvWith(t, gapsPagingWS, false)
	var items, holes []string
	d := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; !d.After(time.Date(2024, 12, 30, 0, 0, 0, 0, time.UTC)); i, d = i+1, d.AddDate(0, 0, 1) {
		if i%2 == 0 {
			items = append(items, fmt.Sprintf(`{"asset":"gp.daily","partition":%q,"status":"materialized"}`, d.Format("2006-01-02")))
		} else {
			holes = append(holes, d.Format("2006-01-02"))
		}
	}
	if r := env.Post(t, "/api/v1/materializations", "["+strings.Join(items, ",")+"]"); r.StatusCode != http.StatusCreated {
		t.Fatalf("report: %d", r.StatusCode)
	}
	if r := env.Post(t, "/api/v1/assets/gp.daily/watermark", `{"partition":"2024-12-30"}`); r.StatusCode != http.StatusOK {
		t.Fatalf("watermark: %d", r.StatusCode)
	}
	return env, holes
}

func gapStarts(doc *goquery.Document) []string {
	var out []string
	doc.Find(`[data-testid="gap-range"] td:first-child`).Each(func(_ int, s *goquery.Selection) { out = append(out, s.Text()) })
	return out
}

// TestGapsEveryRangeReachable: the asset page lists the first 50 gap ranges
// and links to the gaps page, which lists them all 200 a page with
// previous and next links; the summary has no stray space before ';'.
func TestGapsEveryRangeReachable(t *testing.T) {
	env, holes := gapsPagingEnv(t)
	if len(holes) != 182 {
		t.Fatalf("fixture: %d holes", len(holes))
	}
	c := env.Client(t, auth.RoleViewer)
	_, doc := pgGet(t, env, c, "/assets/gp.daily?view=staleness")
	gaps := doc.Find(`[data-testid="gaps"]`)
	if n := gaps.Find(`[data-testid="gap-range"]`).Length(); n != handlers.AssetPageGaps {
		t.Fatalf("asset page lists %d ranges, want %d", n, handlers.AssetPageGaps)
	}
	if got, want := squash(gaps.Find(`[data-testid="gaps-total"]`).Text()), "182 partitions not materialized (missing or failed) in 182 ranges; the first 50 are listed"; got != want {
		t.Fatalf("summary %q, want %q", got, want)
	}
	all := gaps.Find(`[data-testid="gaps-all"]`)
	if href := all.AttrOr("href", ""); href != "/assets/gp.daily/gaps" || !strings.Contains(all.Text(), "182") {
		t.Fatalf("all-ranges link %q %q", href, all.Text())
	}

	// Follow it: 182 ranges fit on one page of 200.
	code, doc := pgGet(t, env, c, "/assets/gp.daily/gaps")
	if code != http.StatusOK || doc.Find("title").Length() != 1 || doc.Find(`[data-testid="nav-main"]`).Length() != 1 {
		t.Fatalf("gaps page: %d, a full page: %v", code, doc.Find("title").Length() == 1)
	}
	if got := gapStarts(doc); strings.Join(got, " ") != strings.Join(holes, " ") {
		t.Fatalf("gaps page lists %d ranges, want all %d", len(got), len(holes))
	}
	if doc.Find(`[data-testid="gaps-next"], [data-testid="gaps-prev"], [data-testid="gaps-all"]`).Length() != 0 {
		t.Fatal("a single page of ranges links to other pages")
	}
	if href := doc.Find(`[data-testid="gaps-asset"]`).AttrOr("href", ""); href != "/assets/gp.daily?view=staleness" {
		t.Fatalf("back to the asset: %q", href)
	}
	if s := squash(doc.Find(`[data-testid="gaps-total"]`).Text()); strings.Contains(s, "listed") {
		t.Fatalf("every range listed, yet %q", s)
	}

	// A search from a start key (every missing day from it to the
	// watermark, 2024-12-30): here the same 182 days.
	code, doc = pgGet(t, env, c, "/assets/gp.daily/gaps?from=2024-01-01&page=1")
	if code != http.StatusOK || len(gapStarts(doc)) != 182 {
		t.Fatalf("from search: %d, %d ranges", code, len(gapStarts(doc)))
	}
	if code, doc = pgGet(t, env, c, "/assets/gp.daily/gaps?page=x"); code != http.StatusBadRequest || !strings.Contains(doc.Find(`[data-testid="error-message"]`).Text(), "page") {
		t.Fatalf("page=x: %d %q", code, doc.Find(`[data-testid="error-message"]`).Text())
	}
	// A page past the end (gaps filled meanwhile) shows the last page.
	if code, doc = pgGet(t, env, c, "/assets/gp.daily/gaps?page=9"); code != http.StatusOK || len(gapStarts(doc)) != 182 {
		t.Fatalf("page past the end: %d, %d ranges", code, len(gapStarts(doc)))
	}
	// htmx asks for the list alone.
	req, _ := http.NewRequest(http.MethodGet, env.URL+"/assets/gp.daily/gaps", nil)
	req.Header.Set("HX-Request", "true")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	frag := pgDoc(t, resp)
	resp.Body.Close()
	if frag.Find("title").Length() != 0 || frag.Find(`[data-testid="gaps"]`).Length() != 1 {
		t.Fatal("htmx answer is not the list alone")
	}
}

// TestGapsPagesOf200: more than 200 ranges are listed 200 a page, with
// previous and next links that keep from; every range is on exactly one page.
func TestGapsPagesOf200(t *testing.T) {
	t.Parallel()
	env, _ := pgEnvWith(t, gapsPagingWS, false)
	var items, holes []string
	d := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i <= 2*250; i, d = i+1, d.AddDate(0, 0, 1) {
		if i%2 == 0 {
			items = append(items, fmt.Sprintf(`{"asset":"gp.daily","partition":%q,"status":"materialized"}`, d.Format("2006-01-02")))
		} else {
			holes = append(holes, d.Format("2006-01-02"))
		}
	}
	last := d.AddDate(0, 0, -1).Format("2006-01-02")
	if r := env.Post(t, "/api/v1/materializations", "["+strings.Join(items, ",")+"]"); r.StatusCode != http.StatusCreated {
		t.Fatalf("report: %d", r.StatusCode)
	}
	if r := env.Post(t, "/api/v1/assets/gp.daily/watermark", `{"partition":"`+last+`"}`); r.StatusCode != http.StatusOK {
		t.Fatalf("watermark: %d", r.StatusCode)
	}
	c := env.Client(t, auth.RoleViewer)
	var seen []string
	path, pages := "/assets/gp.daily/gaps?from=2024-01-01", 0
	for path != "" {
		if pages++; pages > 5 {
			t.Fatal("the next links do not end")
		}
		code, doc := pgGet(t, env, c, path)
		if code != http.StatusOK {
			t.Fatalf("%s: %d", path, code)
		}
		starts := gapStarts(doc)
		if len(starts) > handlers.GapsPageSize {
			t.Fatalf("%s lists %d ranges", path, len(starts))
		}
		sum := squash(doc.Find(`[data-testid="gaps-total"]`).Text())
		want := fmt.Sprintf("in 250 ranges; ranges %d–%d are listed", len(seen)+1, len(seen)+len(starts))
		if len(seen) == 0 {
			want = "in 250 ranges; the first 200 are listed"
		}
		if !strings.HasSuffix(sum, want) {
			t.Fatalf("%s summary %q, want …%q", path, sum, want)
		}
		if prev := doc.Find(`[data-testid="gaps-prev"]`).AttrOr("href", ""); (len(seen) > 0) != (prev != "") || (prev != "" && !strings.Contains(prev, "from=2024-01-01")) {
			t.Fatalf("%s previous link %q", path, prev)
		}
		seen = append(seen, starts...)
		path = doc.Find(`[data-testid="gaps-next"]`).AttrOr("href", "")
		if path != "" && !strings.Contains(path, "from=2024-01-01") {
			t.Fatalf("next link %q drops from", path)
		}
	}
	if pages != 2 || strings.Join(seen, " ") != strings.Join(holes, " ") {
		t.Fatalf("%d pages listed %d ranges, want 2 pages listing all %d", pages, len(seen), len(holes))
	}
}

// TestBackfillTheseGaps: operators get "Backfill these gaps" next to the
// gap list, in the new-backfill link format of "Fill gaps", and the form
// it opens previews exactly the missing partitions; viewers do not.
func TestBackfillTheseGaps(t *testing.T) {
	env, holes := gapsPagingEnv(t)
	op := env.Client(t, auth.RoleOperator)
	want := "/backfills/new?asset=gp.daily&selector=gaps"
	for _, path := range []string{"/assets/gp.daily?view=staleness", "/assets/gp.daily/gaps"} {
		_, doc := pgGet(t, env, op, path)
		if href := doc.Find(`[data-testid="gaps"] [data-testid="backfill-gaps"]`).AttrOr("href", ""); href != want {
			t.Fatalf("%s: backfill-gaps href %q, want %q", path, href, want)
		}
		_, vdoc := pgGet(t, env, env.Client(t, auth.RoleViewer), path)
		if vdoc.Find(`[data-testid="backfill-gaps"]`).Length() != 0 {
			t.Fatalf("%s offers a viewer to backfill", path)
		}
	}
	// From a start: the link keeps it as the form's Start.
	_, doc := pgGet(t, env, op, "/assets/gp.daily/gaps?from=2024-06-01")
	if href := doc.Find(`[data-testid="backfill-gaps"]`).AttrOr("href", ""); href != want+"&start=2024-06-01" {
		t.Fatalf("from search: backfill-gaps href %q", href)
	}
	// The form it opens: "Fill gaps" chosen, previewing the 182 holes.
	code, form := pgGet(t, env, op, want)
	if code != http.StatusOK || form.Find(`input[name="selector"][value="gaps"][checked]`).Length() != 1 {
		t.Fatalf("new-backfill form: %d, gaps chosen: %d", code, form.Find(`input[name="selector"][value="gaps"][checked]`).Length())
	}
	if n := form.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""); n != fmt.Sprint(len(holes)) {
		t.Fatalf("preview: %s partitions, want %d", n, len(holes))
	}
	// The new-backfill page's own gap preview does not offer itself again.
	if form.Find(`[data-testid="backfill-gaps"]`).Length() != 0 {
		t.Fatal("the new-backfill form links to itself")
	}
}

// The warning of an asset without a watermark suggests a curl command: pasted
// into a shell with TESSERA_URL and TESSERA_TOKEN set, it must record the
// watermark (the token must be expanded, so not inside single quotes).
func TestNoWatermarkWarningCommandWorksInAShell(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	env := testkit.New(t, testkit.Options{WorkspaceYAML: gapsWS})
	code, g, _ := gapsOf(t, env, "gaps.daily", "")
	if code != 200 || !g.Skipped {
		t.Fatalf("no watermark: %d %+v", code, g)
	}
	if !strings.Contains(g.Warning, "tessera report gaps.daily --watermark KEY") {
		t.Errorf("the warning does not name the CLI command: %q", g.Warning)
	}
	i := strings.Index(g.Warning, "curl ")
	if i < 0 {
		t.Fatalf("no curl command in %q", g.Warning)
	}
	command := strings.ReplaceAll(g.Warning[i:], "KEY", "2025-01-20")

	// A stand-in curl prints the arguments the shell gives it, one a line;
	// the test then sends that request for real.
	script := `curl() { for a in "$@"; do printf '%s\n' "$a"; done; }; ` + command
	cmd := exec.Command(sh, "-c", script)
	cmd.Env = []string{"TESSERA_URL=" + env.URL, "TESSERA_TOKEN=" + env.AdminToken(), "PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", script, err)
	}
	args := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	var method, body, target string
	header := http.Header{}
	for j := 0; j < len(args); j++ {
		switch args[j] {
		case "-X":
			j++
			method = args[j]
		case "-H":
			j++
			k, v, _ := strings.Cut(args[j], ": ")
			header.Add(k, v)
		case "-d":
			j++
			body = args[j]
		default:
			target = args[j]
		}
	}
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		t.Fatalf("the suggested command is not a request (%q): %v", args, err)
	}
	req.Header = header
	resp := testkit.DoNoBody(t, http.DefaultClient, req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the suggested command %q answered %d (arguments as the shell passes them: %q)", command, resp.StatusCode, args)
	}

	resp = env.BearerDo(t, "GET", "/api/v1/assets/gaps.daily/watermark", env.AdminToken(), "", "")
	defer resp.Body.Close()
	var wm struct {
		Partition string `json:"partition"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&wm); err != nil || wm.Partition != "2025-01-20" {
		t.Fatalf("watermark after the suggested command: %+v %v", wm, err)
	}
}

func TestGapsToTheWatermark(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: gapsWS})
	for _, d := range []string{"03", "04", "05", "08", "10", "11", "12"} {
		mat(t, env, "gaps.daily", "2025-01-"+d, "", T0)
	}
	record(t, env, "gaps.daily", "2025-01-09", db.StatusFailed, "", T0) // failed is still a gap

	// No watermark: skipped, with a warning that says how to record one.
	code, g, _ := gapsOf(t, env, "gaps.daily", "")
	if code != 200 || !g.Skipped || !strings.Contains(g.Warning, "no watermark") || !strings.Contains(g.Warning, "/api/v1/assets/gaps.daily/watermark") {
		t.Fatalf("no watermark: %d %+v", code, g)
	}
	if _, doc := get(t, env, "/assets/gaps.daily?view=staleness"); !strings.Contains(doc.Find(`[data-testid="gaps-warning"]`).Text(), "no watermark") {
		t.Fatal("the asset page does not warn about the missing watermark")
	}

	// Bad watermarks write nothing.
	events := func() (n int) { env.Store.RawReader().Get(&n, `SELECT COUNT(*) FROM events`); return }
	env.AdminToken()
	e0 := events()
	for _, body := range []string{`{"partition":"2025-13-01"}`, `{"partition":"2024-12-31"}`, `{"partition":"2025-02-01"}`, `{}`, `{"partition":5}`} {
		resp := env.Post(t, "/api/v1/assets/gaps.daily/watermark", body)
		var e apiError
		decode(t, resp, &e)
		if resp.StatusCode != http.StatusBadRequest || e.Error.Field == "" || e.Error.Message == "" {
			t.Fatalf("watermark %s: %s %+v", body, resp.Status, e)
		}
	}
	var n int
	env.Store.RawReader().Get(&n, `SELECT COUNT(*) FROM watermarks`)
	if n != 0 || events() != e0 {
		t.Fatalf("bad watermarks wrote %d rows, %d events", n, events()-e0)
	}
	viewerTok := env.Token(t, auth.RoleViewer)
	if resp := env.BearerDo(t, http.MethodPost, "/api/v1/assets/gaps.daily/watermark", viewerTok, "application/json", `{"partition":"2025-01-11"}`); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("viewer sets a watermark: %s", resp.Status)
	}

	if resp := env.Post(t, "/api/v1/assets/gaps.daily/watermark", `{"partition":"2025-01-11"}`); resp.StatusCode != 200 {
		t.Fatalf("watermark: %s", resp.Status)
	}
	// Catch-up: holes inside the materialized range, never past the watermark.
	code, g, _ = gapsOf(t, env, "gaps.daily", "")
	if code != 200 || g.Skipped || g.Mode != "catch-up" || rangesString(g) != "2025-01-06..2025-01-07=2 2025-01-09..2025-01-09=1" || g.Total != 3 {
		t.Fatalf("catch-up: %d %+v", code, g)
	}
	// --from: everything missing from that key up to the watermark.
	code, g, _ = gapsOf(t, env, "gaps.daily", "2025-01-01")
	if code != 200 || rangesString(g) != "2025-01-01..2025-01-02=2 2025-01-06..2025-01-07=2 2025-01-09..2025-01-09=1" || g.Total != 5 {
		t.Fatalf("from: %d %+v", code, g)
	}
	// The same ranges as HTML, for the asset page and the new-backfill page.
	code, doc := get(t, env, "/assets/gaps.daily/gaps?from=2025-01-01")
	if code != 200 || doc.Find(`[data-testid="gap-range"]`).Length() != 3 || !strings.Contains(doc.Find(`[data-testid="gaps-total"]`).Text(), "5") {
		t.Fatalf("gaps fragment: %d %q", code, doc.Text())
	}
	_, doc = get(t, env, "/assets/gaps.daily?view=staleness")
	if doc.Find(`[data-testid="gaps"] [data-testid="gap-range"]`).Length() != 2 {
		t.Fatalf("asset page gaps: %q", doc.Find(`[data-testid="gaps"]`).Text())
	}
	// --from after the watermark, or outside the scheme: a clear error.
	code, _, e := gapsOf(t, env, "gaps.daily", "2025-01-20")
	if code != http.StatusBadRequest || e.Error.Field != "from" || !strings.Contains(e.Error.Message, "after the watermark 2025-01-11") {
		t.Fatalf("from after watermark: %d %+v", code, e)
	}
	if code, _, e = gapsOf(t, env, "gaps.daily", "2025-99-01"); code != http.StatusBadRequest || e.Error.Field != "from" {
		t.Fatalf("from outside the scheme: %d %+v", code, e)
	}
	// A watermark below the materialized range yields nothing.
	env.Post(t, "/api/v1/assets/gaps.daily/watermark", `{"partition":"2025-01-02"}`)
	code, g, _ = gapsOf(t, env, "gaps.daily", "")
	if code != 200 || len(g.Ranges) != 0 || g.Total != 0 || !strings.Contains(g.Note, "below the materialized range") {
		t.Fatalf("watermark below data: %d %+v", code, g)
	}

	// Multi-dimensional: time-major index order, a time-part watermark
	// covers every region of that day.
	for _, k := range []string{"2025-01-01|eu", "2025-01-01|us", "2025-01-02|eu", "2025-01-04|us", "2025-01-05|eu"} {
		mat(t, env, "gaps.multi", k, "", T0)
	}
	if resp := env.Post(t, "/api/v1/assets/gaps.multi/watermark", `{"partition":"2025-01-04"}`); resp.StatusCode != 200 {
		t.Fatalf("multi watermark: %s", resp.Status)
	}
	code, g, _ = gapsOf(t, env, "gaps.multi", "")
	if code != 200 || rangesString(g) != "2025-01-02|us..2025-01-04|eu=4" {
		t.Fatalf("multi catch-up: %d %+v", code, g)
	}
	if resp := env.Post(t, "/api/v1/assets/gaps.multi/watermark", `{"partition":"2025-01-04|mars"}`); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("multi watermark outside the scheme: %s", resp.Status)
	}
}
