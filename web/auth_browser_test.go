package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// TestBrowserLoginOverviewLogout: in headless Chromium, an anonymous visit is
// sent to /login, signing in lands on the overview with the user in the
// header, and signing out (a CSRF-protected form) returns to /login.
func TestBrowserLoginOverviewLogout(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{Seed: true})
	env.CreateUser(t, "grace", auth.RoleOperator, testkit.TestPassword)
	ctx := testkit.Browser(t)
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

// TestBrowserChangeOwnPassword: from the header's Password link, a user
// changes their password; a mistyped confirmation is shown at its field, the
// change is confirmed, and the next sign-in takes the new password.
func TestBrowserChangeOwnPassword(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	env.CreateUser(t, "hedy", auth.RoleViewer, testkit.TestPassword)
	ctx := testkit.Browser(t)
	const next = "frequency hopping spread"
	fill := func(cur, nw, again string) []chromedp.Action[chromedp.Void] {
		return []chromedp.Action[chromedp.Void]{
			chromedp.SetValue(css(`input[name="current_password"]`), cur),
			chromedp.SetValue(css(`input[name="new_password"]`), nw),
			chromedp.SetValue(css(`input[name="confirm_password"]`), again),
			chromedp.Click(css(`[data-testid="change-password"]`)),
		}
	}
	testkit.BrowserLogin(t, ctx, env.URL, "hedy", testkit.TestPassword)
	err := chromedp.Do(ctx, append(append([]chromedp.Action[chromedp.Void]{
		chromedp.WaitVisible(css(`[data-testid="nav-password"]`)),
		chromedp.Click(css(`[data-testid="nav-password"]`)),
		chromedp.WaitVisible(css(`[data-testid="password-form"]`)),
	}, fill(testkit.TestPassword, next, next+"x")...), chromedp.WaitVisible(css(`[data-testid="form-error"]`)))...)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := chromedp.Run(ctx, chromedp.Text(css(`[data-testid="form-error"]`)))
	invalid, _ := chromedp.Run(ctx, chromedp.AttributeValue(css(`input[name="confirm_password"]`), "aria-invalid"))
	if !strings.Contains(msg, "differ") || !invalid.Exists {
		t.Fatalf("mistyped confirmation: %q, aria-invalid %+v", msg, invalid)
	}
	err = chromedp.Do(ctx, append(fill(testkit.TestPassword, next, next), chromedp.WaitVisible(css(`[data-testid="notice"]`)))...)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Screenshot(t, ctx, "password-changed")
	err = chromedp.Do(ctx,
		chromedp.Click(css(`[data-testid="logout"]`)),
		chromedp.WaitVisible(css(`[data-testid="login"]`)),
	)
	if err != nil {
		t.Fatalf("sign out: %v", err)
	}
	testkit.BrowserLogin(t, ctx, env.URL, "hedy", next) // the new password
}
