package handlers_test

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

const dstWS = `
assets:
  ny.hourly:
    partitions: {hourly: {start: "2025-10-30-00:00-0400", timezone: America/New_York, key_format: "%Y-%m-%d-%H:%M%z"}}
    executor: {demo: {duration: 1ms}}
`

var colClassRE = regexp.MustCompile(`(?:^|\s)c(\d+)(?:\s|$)`)

// placedRows lays the grid's rows out as CSS grid auto-placement does: a
// tile with a cN class starts at column N, any other follows the tile
// before it (the row label is column 0). It returns, per row label, the
// header label above each tile and the tile's title, and the number of
// columns the rows declare (cols-N).
func placedRows(t *testing.T, doc *goquery.Document) (head []string, rows map[string][][2]string, cols map[string]int) {
	t.Helper()
	grid := doc.Find(`[data-testid="grid"]`)
	grid.Find(`.gh span:not(.rl)`).Each(func(_ int, s *goquery.Selection) { head = append(head, s.Text()) })
	rows, cols = map[string][][2]string{}, map[string]int{}
	grid.Find(`.gr:not(.gh)`).Each(func(_ int, r *goquery.Selection) {
		label := r.Find(".rl").Text()
		for _, c := range strings.Fields(r.AttrOr("class", "")) {
			if n, ok := strings.CutPrefix(c, "cols-"); ok {
				cols[label], _ = strconv.Atoi(n)
			}
		}
		col := 0
		r.Find("a.t").Each(func(_ int, a *goquery.Selection) {
			if m := colClassRE.FindStringSubmatch(a.AttrOr("class", "")); m != nil {
				col, _ = strconv.Atoi(m[1])
			} else {
				col++
			}
			h := "(past the header)"
			if col-1 < len(head) {
				h = head[col-1]
			}
			rows[label] = append(rows[label], [2]string{h, a.AttrOr("title", "")})
		})
	})
	return head, rows, cols
}

// TestCalendarFallBackDayHas25Columns: an hourly asset in America/New_York
// has 25 partitions on 2025-11-02 (01:00 twice, EDT then EST). Its calendar
// draws 25 columns, the repeated hour with a header of its own, so that
// every tile sits under the header of its hour and none wraps; the days
// around it leave the extra column empty. The spring-forward day
// (2026-03-08) leaves its missing 02:00 empty. Before, the 25th tile wrapped
// and every tile after the repeated hour sat one column right of its header.
func TestCalendarFallBackDayHas25Columns(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: dstWS})
	c := env.Client(t, auth.RoleViewer)
	hourOf := func(title string) string {
		// titles start with the key: 2025-11-02-01:00-0500 · missing
		return strings.SplitN(strings.SplitN(title, " ", 2)[0], "-", 5)[3][:2]
	}
	check := func(from, to, day string, tiles int) {
		t.Helper()
		status, doc := pgGet(t, env, c, "/assets/ny.hourly?from="+from+"&to="+to)
		if status != 200 {
			t.Fatalf("asset page %s..%s: %d", from, to, status)
		}
		head, rows, cols := placedRows(t, doc)
		if len(rows[day]) != tiles {
			t.Fatalf("%s has %d tiles, want %d (rows: %v)", day, len(rows[day]), tiles, slices.Collect(maps.Keys(rows)))
		}
		for label, tt := range rows {
			if cols[label] != len(head) {
				t.Errorf("row %s declares %d columns under a header of %d", label, cols[label], len(head))
			}
			for _, x := range tt {
				if h := hourOf(x[1]); h != x[0] {
					t.Errorf("row %s: tile %q sits under header %q", label, x[1], x[0])
				}
			}
		}
	}
	check("2025-11-01-00:00-0400", "2025-11-03-23:00-0500", "Sun 2025-11-02", 25)
	_, doc := pgGet(t, env, c, "/assets/ny.hourly?from=2025-11-01-00:00-0400&to=2025-11-03-23:00-0500")
	if head, _, _ := placedRows(t, doc); len(head) != 25 || head[1] != "01" || head[2] != "01" || head[3] != "02" {
		t.Errorf("fall-back header %v, want 25 columns with 01 twice", head)
	}
	check("2026-03-07-00:00-0500", "2026-03-09-23:00-0400", "Sun 2026-03-08", 23)
	_, doc = pgGet(t, env, c, "/assets/ny.hourly?from=2026-03-07-00:00-0500&to=2026-03-09-23:00-0400")
	if head, _, _ := placedRows(t, doc); len(head) != 24 {
		t.Errorf("spring-forward header has %d columns, want 24", len(head))
	}
}
