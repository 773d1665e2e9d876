package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/handlers"
)

// selWorkspace is a small daily × region asset: 9 days (the end is
// exclusive) × 3 regions.
const selWorkspace = `defaults:
  retries: {max_attempts: 1}
assets:
  t.multi:
    partitions:
      multi:
        date: {daily: {start: "2025-01-01", end: "2025-01-10"}}
        region: {static: [eu, us, apac]}
    code_version: v1
    executor: {demo: {duration: 5ms}}
`

// TestSelectionCountReadsTheDimensionFilter: the asset grid's selection bar
// counts its "Only (name=value)" filter as the new-backfill form it opens
// previews it, and refuses an unknown dimension or value with the form's
// message (it used to ignore the filter: 6 selected, a preview of 2).
func TestSelectionCountReadsTheDimensionFilter(t *testing.T) {
	env, _ := pgEnvWith(t, selWorkspace, false)
	c := env.Client(t, handlers.RoleOperator)
	count := func(q url.Values) (n, msg string) {
		t.Helper()
		_, doc := pgGet(t, env, c, "/backfills/selection?"+q.Encode())
		return doc.Find(`[data-testid="selection-n"]`).AttrOr("data-n", ""), strings.TrimSpace(doc.Find(`[data-testid="selection-error"]`).Text())
	}
	csrf := env.CSRF(t, c)
	// form is the new-backfill form's live preview of the same fields.
	form := func(q url.Values) (n, msg string) {
		t.Helper()
		f := url.Values{"_csrf": {csrf}, "chunk_size": {"1"}, "max_concurrent_runs": {"1"}, "priority": {"0"}}
		for k, v := range q {
			f[k] = v
		}
		req, _ := http.NewRequest(http.MethodPost, env.URL+"/backfills/preview", strings.NewReader(f.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("HX-Request", "true")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		doc := pgDoc(t, resp)
		return doc.Find(`[data-testid="preview-partitions"]`).AttrOr("data-n", ""), strings.TrimSpace(doc.Find(`[data-testid="preview-error"]`).Text())
	}
	cases := []struct {
		name, start, end, dim string
		want                  string // the count; "" when refused
	}{
		{"range and region", "2025-01-02|us", "2025-01-04|eu", "region=eu", "2"},
		{"region alone", "", "", "region=eu", "9"},
		{"spaces around", "", "", " region = apac ", "9"},
		{"range alone", "2025-01-02|us", "2025-01-04|eu", "", "6"},
		{"unknown dimension", "", "", "zone=xx", ""},
		{"unknown value", "", "", "region=mars", ""},
		{"not name=value", "", "", "region", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := url.Values{"asset": {"t.multi"}, "select_mode": {"1"}, "start": {tc.start}, "end": {tc.end}, "dimension": {tc.dim}}
			n, msg := count(q)
			fn, fmsg := form(q)
			if tc.want != "" {
				if n != tc.want || msg != "" {
					t.Fatalf("count %q (error %q), want %s", n, msg, tc.want)
				}
				if fn != n {
					t.Errorf("the bar counts %s, the form it opens previews %s", n, fn)
				}
				return
			}
			if n != "" || msg == "" {
				t.Fatalf("count %q with no message, want a refusal", n)
			}
			if msg != fmsg {
				t.Errorf("the bar says %q, the form says %q", msg, fmsg)
			}
		})
	}
}
