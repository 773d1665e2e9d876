package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/testkit"
)

// TestBrowserUnlock: an admin sees a locked account on /admin/users, at
// 1280 and 390 px, with why it is locked, and lifts the lock with its
// Unlock button; the account then signs in.
func TestBrowserUnlock(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{Auth: &handlers.AuthConfig{LoginLimit: auth.Limit{Failures: 3, Window: time.Hour}, FailureDelay: -1, TrustProxy: true}})
	env.CreateUser(t, "jo", auth.RoleViewer, testkit.TestPassword)
	for i := range 3 {
		signInFrom(t, env, "198.51.100."+itoa(int64(i+1)), "jo", "wrong password!", nil)
	}
	if st, _, _ := signInFrom(t, env, "203.0.113.5", "jo", testkit.TestPassword, nil); st != http.StatusTooManyRequests {
		t.Fatalf("jo before the unlock: %d", st)
	}
	ctx := env.SignedInBrowser(t, auth.RoleAdmin)
	row := `tr[data-user="jo"] [data-testid="locked"]`
	for _, w := range []int64{1280, 390} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, 844), chromedp.Navigate(env.URL+"/admin/users"), chromedp.WaitVisible(row)); err != nil {
			t.Fatal(err)
		}
		text, err := chromedp.Run(ctx, chromedp.Text(row))
		if err != nil {
			t.Fatal(err)
		}
		// The button can be reached: scrolled into view, it lies inside the window.
		inView, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const b = document.querySelector('tr[data-user="jo"] [data-testid="locked"] button'); b.scrollIntoView({block: "center", inline: "center"}); const r = b.getBoundingClientRect(); return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth })()`))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text, "3 failed sign-ins from 3 addresses") || !strings.Contains(text, "Unlock") || !inView {
			t.Fatalf("at %d px the lock reads %q (Unlock reachable: %v)", w, text, inView)
		}
		testkit.Screenshot(t, ctx, "admin-users-locked-"+itoa(w))
	}
	// A form: the locks left are counted once the page it leads to has
	// loaded (a half-parsed page, its notice shown, could count none by
	// accident).
	testkit.ClickAndLoad(t, ctx, `tr[data-user="jo"] [data-testid="locked"] button`, 30*time.Second)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(`[data-testid="notice"]`)); err != nil {
		t.Fatal(err)
	}
	notice, err := chromedp.Run(ctx, chromedp.Text(`[data-testid="notice"]`))
	if err != nil {
		t.Fatal(err)
	}
	left, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="locked"]').length`))
	if err != nil {
		t.Fatal(err)
	}
	if notice != "Unlocked jo (forgot 3 failed sign-ins)." || left != 0 {
		t.Fatalf("after Unlock: notice %q, %d locks shown", notice, left)
	}
	if st, _, _ := signInFrom(t, env, "203.0.113.5", "jo", testkit.TestPassword, nil); st != http.StatusSeeOther {
		t.Fatalf("jo after the unlock: %d", st)
	}
}
