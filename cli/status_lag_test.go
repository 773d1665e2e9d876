package cli_test

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
)

// TestStatusLagReadsLikeTheWebPage: tessera status writes lag as the status
// page does ("206 days 6 h"), not as a Go duration ("4950h38m4s"); --json
// keeps lag_seconds.
func TestStatusLagReadsLikeTheWebPage(t *testing.T) {
	t.Setenv("TESSERA_CONFIG", filepath.Join(t.TempDir(), "none.json"))
	s := startServerWith(t, `
assets:
  t.daily:
    partitions: {daily: {start: 2025-01-01}}
    freshness: {max_lag: 26h}
    executor: {demo: {duration: 1ms}}
  t.one:
    partitions: {static: [only]}
    executor: {demo: {duration: 1ms}}
`)
	for _, args := range [][]string{{"report", "t.daily", "2025-01-01"}, {"report", "t.one", "only"}} {
		if code, out, errOut := s.cli(t, args...); code != 0 {
			t.Fatalf("%v: %d %q %q", args, code, out, errOut)
		}
	}
	code, out, errOut := s.cli(t, "status", "--json")
	var st struct {
		Assets []struct {
			Asset      string `json:"asset"`
			LagSeconds *int64 `json:"lag_seconds"`
			Policy     string `json:"freshness_policy"`
			OverPolicy bool   `json:"over_policy"`
		} `json:"assets"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Assets) != 2 {
		t.Fatalf("status --json: %d %q %q", code, out, errOut)
	}
	lag := map[string]int64{}
	for _, a := range st.Assets {
		if a.LagSeconds == nil {
			t.Fatalf("status --json: %s has no lag_seconds: %s", a.Asset, out)
		}
		lag[a.Asset] = *a.LagSeconds
		if a.Asset == "t.daily" && (!a.OverPolicy || a.Policy == "") {
			t.Fatalf("status --json: t.daily is not over its policy: %s", out)
		}
	}
	if lag["t.daily"] < 48*3600 {
		t.Fatalf("t.daily lags %d s; the test wants days", lag["t.daily"])
	}

	code, out, errOut = s.cli(t, "status")
	if code != 0 {
		t.Fatalf("status: %d %q %q", code, out, errOut)
	}
	if goDur := regexp.MustCompile(`\d+h\d+m|\d+m\d+(\.\d+)?s`); goDur.MatchString(out) {
		t.Errorf("status writes a Go duration (%q):\n%s", goDur.FindString(out), out)
	}
	// The table was read a moment after the JSON: its lag is the web's text
	// of the JSON's lag_seconds, or of a few seconds more.
	wants := func(asset string, note string) []string {
		var w []string
		for d := int64(0); d <= 5; d++ {
			w = append(w, catalog.HumanDuration(time.Duration(lag[asset]+d)*time.Second)+note)
		}
		return w
	}
	rowOf := func(asset string) string {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[1] == asset {
				return l
			}
		}
		t.Fatalf("no row for %s:\n%s", asset, out)
		return ""
	}
	for asset, want := range map[string][]string{
		"t.daily": wants("t.daily", " (over policy: max lag 26h)"),
		"t.one":   wants("t.one", ""),
	} {
		row, ok := rowOf(asset), false
		for _, w := range want {
			ok = ok || strings.Contains(row, "  "+w+"  ")
		}
		if !ok {
			t.Errorf("row of %s %q has none of the lags %q", asset, row, want)
		}
	}
	if !regexp.MustCompile(`\s\d+ days \d+ h \(over policy: max lag 26h\)\s`).MatchString(rowOf("t.daily")) {
		t.Errorf("t.daily's lag is not in days and hours: %q", rowOf("t.daily"))
	}
}
