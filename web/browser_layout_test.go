package web_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/tessera-dev/tessera/testkit"
)

// The overview and the status board draw one table per group; their
// columns line up down the page (before, each table sized its columns to
// its own content, so health bars and badges zigzagged between groups).
func TestBrowserGroupTablesLineUp(t *testing.T) {
	t.Parallel()
	s := startBinaryServer(t, testkit.Assets(
		testkit.Asset("a.short", "{static: [a]}", "group: one"),
		testkit.Asset("b.a_much_longer_asset_name_than_the_other", "{static: [a_rather_long_partition_key, another_rather_long_partition_key, and_a_third_one]}", "group: two", "description: its partitions are described at length"),
	))
	ctx := s.browser(t)
	// The left edge of column n of every table of class cls, rounded.
	edges := `(cls, n) => Array.from(document.querySelectorAll("table." + cls)).map(t => Math.round(t.querySelector("th:nth-child(" + n + ")").getBoundingClientRect().left))`
	for _, page := range []struct {
		path, class string
		cols        int
	}{{"/", "assets", 4}, {"/status", "status", 7}} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(s.URL+page.path), chromedp.WaitVisible("table."+page.class)); err != nil {
			t.Fatal(err)
		}
		for n := 2; n <= page.cols; n++ {
			left, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](fmt.Sprintf("(%s)(%q, %d)", edges, page.class, n)))
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != 2 || left[0] != left[1] {
				t.Errorf("%s: column %d starts at %v in the two group tables", page.path, n, left)
			}
		}
	}
}
