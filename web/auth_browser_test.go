package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/testkit"
)

// TestBrowserLoginOverviewLogout: in headless Chromium, an anonymous visit is
// sent to /login, signing in lands on the overview with the user in the
// header, and signing out (a CSRF-protected form) returns to /login.
func TestBrowserLoginOverviewLogout(t *testing.T) {
	env := testkit.New(t, testkit.Options{Seed: true})
	env.CreateUser(t, "grace", handlers.RoleOperator, testkit.TestPassword)
	ctx := testkit.Browser(t)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	err := chromedp.Do(ctx,
		chromedp.Navigate(env.URL+"/"),
		chromedp.WaitVisible(css(`[data-testid="login"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	if !strings.Contains(loc, "/login?next=%2F") {
		t.Fatalf("anonymous visit landed on %s", loc)
	}
	err = chromedp.Do(ctx,
		chromedp.SendKeys(css(`input[name="name"]`), "grace"),
		chromedp.SendKeys(css(`input[name="password"]`), testkit.TestPassword),
		chromedp.Click(css(`[data-testid="login-submit"]`)),
		chromedp.WaitVisible(css(`[data-testid="asset-row"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	who, _ := chromedp.Run(ctx, chromedp.Text(css(`[data-testid="current-user"]`)))
	if !strings.Contains(who, "grace") || !strings.Contains(who, "operator") {
		t.Fatalf("header shows %q", who)
	}
	testkit.Screenshot(t, ctx, "signed-in-overview")
	err = chromedp.Do(ctx,
		chromedp.Click(css(`[data-testid="logout"]`)),
		chromedp.WaitVisible(css(`[data-testid="login"]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx,
		chromedp.Navigate(env.URL+"/settings/tokens"),
		chromedp.WaitVisible(css(`[data-testid="login"]`)),
	)
	if err != nil {
		t.Fatalf("signed-out browser still reaches /settings/tokens: %v", err)
	}
}
