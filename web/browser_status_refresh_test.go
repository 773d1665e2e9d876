package web_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// TestBrowserStatusBoardRefreshes: a status board left open on a wall
// screen shows a partition materialized after it was loaded, within its
// refresh period, without a reload of the page (a marker set on the window
// survives), and its "Updated" time moves on.
func TestBrowserStatusBoardRefreshes(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	ctx := env.SignedInBrowser(t, auth.RoleViewer)
	const fresh = `document.querySelector('[data-testid="status-row"][data-asset="crm.accounts_snapshot"] [data-testid="fresh-n"]').textContent`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(env.URL+"/status?refresh=5"),
		chromedp.WaitVisible(css(`[data-testid="status-board"]`)),
		chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`),
	); err != nil {
		t.Fatal(err)
	}
	if got := testkit.JS(t, ctx, fresh); got != "0" {
		t.Fatalf("crm.accounts_snapshot fresh before: %q", got)
	}
	updated := testkit.JS(t, ctx, `document.querySelector('[data-testid="updated-at"]').textContent`)
	resp := env.Post(t, "/api/v1/materializations", `{"materializations":[{"asset":"crm.accounts_snapshot","partition":"acme","status":"materialized","code_version":"v1"}]}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("report: %d", resp.StatusCode)
	}
	testkit.WaitJS(t, ctx, fresh+` === "1"`, 30*time.Second, "the board to show acme materialized")
	if testkit.JS(t, ctx, `String(window.notReloaded === true)`) != "true" {
		t.Error("the page was reloaded instead of the board refreshed in place")
	}
	if now := testkit.JS(t, ctx, `document.querySelector('[data-testid="updated-at"]').textContent`); now == updated {
		t.Errorf("Updated still reads %q after a refresh", now)
	}
	if stopped := testkit.JS(t, ctx, `String(document.querySelector('[data-testid="refresh-stopped"]').hidden)`); stopped != "true" {
		t.Errorf("the board says it stopped refreshing")
	}
}
