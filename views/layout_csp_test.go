package views

import (
	"encoding/json"
	"testing"
)

// htmx adds its request-indicator style as an inline <style> unless told
// not to; the CSP (style-src 'self') blocks it and every page logged a
// console error. The layout tells htmx not to (Tessera styles no
// indicator).
func TestLayoutKeepsHtmxFromInliningStyles(t *testing.T) {
	d := doc(t, Layout(Page{Title: "x"}))
	content, ok := d.Find(`meta[name="htmx-config"]`).Attr("content")
	if !ok {
		t.Fatal("no htmx-config meta")
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(content), &cfg); err != nil {
		t.Fatalf("htmx-config %q: %v", content, err)
	}
	if cfg["includeIndicatorStyles"] != false {
		t.Fatalf("htmx-config %q: includeIndicatorStyles is not false", content)
	}
}
