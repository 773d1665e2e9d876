package web_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// darkContrast returns "" when the page's background is dark and every
// piece of text on it can be read: its colour against the first opaque
// background behind it has a contrast ratio of at least 3 (WCAG's figure
// for large text; text over a patterned fill, a status tile, is left out).
// A light box kept from the light theme behind light text fails here.
const darkContrast = `(() => {
  const rgb = s => (s.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => { const f = c => (c /= 255) <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const bgOf = e => {
    for (; e; e = e.parentElement) {
      const cs = getComputedStyle(e);
      if (cs.backgroundImage !== "none") return null;
      const c = rgb(cs.backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3);
    }
    return rgb(getComputedStyle(document.documentElement).backgroundColor).slice(0, 3);
  };
  const page = bgOf(document.body);
  if (!page || lum(page) > 0.05) return "the page background is not dark: " + getComputedStyle(document.body).backgroundColor;
  const bad = [];
  for (const e of document.body.querySelectorAll("*")) {
    if (![...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()) || !e.getClientRects().length) continue;
    const cs = getComputedStyle(e);
    if (cs.visibility === "hidden" || e.closest("svg")) continue;
    const bg = bgOf(e);
    if (!bg) continue;
    const a = lum(rgb(cs.color).slice(0, 3)), b = lum(bg);
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 3) bad.push(e.tagName.toLowerCase() + (e.className && typeof e.className === "string" ? "." + e.className.trim().split(/\s+/).join(".") : "") +
      " " + JSON.stringify(e.textContent.trim().slice(0, 30)) + ": " + cs.color + " on rgb(" + bg.join(",") + "), ratio " + ratio.toFixed(2));
  }
  return bad.slice(0, 6).join("; ");
})()`

// TestBrowserDarkModeFollowsSystem: with the system set to dark, every
// page is dark and its text readable (darkContrast); set to light, the same
// page is light. Screenshots go to TESSERA_SCREENSHOTS.
func TestBrowserDarkModeFollowsSystem(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{Seed: true})
	ctx := env.SignedInBrowser(t, auth.RoleAdmin)
	scheme := func(v string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}},
			})
			return err
		})
	}
	pages := []struct{ name, path, wait string }{
		{"overview", "/", `main table`},
		{"status", "/status", `main table`},
		{"asset", "/assets/raw.events", `[data-testid="grid"]`},
		{"asset-multi", "/assets/ml.features", `[data-testid="grid"]`},
		{"partition", "/assets/crm.accounts_snapshot/partitions/acme", `main h1`},
		{"backfills", "/backfills", `main h1`},
		{"new-backfill", "/backfills/new?asset=crm.accounts_snapshot", `[data-testid="launch"]`},
		{"automation", "/automation", `main h1`},
		{"runs", "/runs", `main h1`},
		{"sensors", "/sensors", `main h1`},
		{"users", "/admin/users", `main table`},
		{"tokens", "/settings/tokens", `main h1`},
	}
	for _, p := range pages {
		if err := chromedp.Do(ctx, scheme("dark"), chromedp.EmulateViewport(1280, 800), chromedp.Navigate(env.URL+p.path), chromedp.WaitVisible(chromedp.CSS(p.wait))); err != nil {
			t.Fatalf("%s: %v", p.path, err)
		}
		testkit.Screenshot(t, ctx, "dark-1280-"+p.name)
		eval(t, ctx, fmt.Sprintf("%s (%s) in dark mode", p.name, p.path), darkContrast)
	}
	if err := chromedp.Do(ctx, scheme("light"), chromedp.Navigate(env.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`main table`))); err != nil {
		t.Fatal(err)
	}
	bg := testkit.JS(t, ctx, `getComputedStyle(document.body).backgroundColor`)
	if bg == "" || bg == "rgb(16, 21, 28)" {
		t.Errorf("light mode: the page background is %q, want the light theme's", bg)
	}
	if err := chromedp.Do(ctx, scheme("dark"), chromedp.EmulateViewport(390, 844), chromedp.Navigate(env.URL+"/assets/raw.events"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="grid"]`))); err != nil {
		t.Fatal(err)
	}
	testkit.Screenshot(t, ctx, "dark-390-asset")
	eval(t, ctx, "asset at 390 px in dark mode", darkContrast)
}
