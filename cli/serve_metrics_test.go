package cli_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/testkit"
)

// TestServeMetricsAccess: serve keeps /metrics for viewers unless told
// otherwise: --metrics-addr serves it on a listener of its own (and not on
// --addr), TESSERA_METRICS_PUBLIC=true to anyone on --addr.
func TestServeMetricsAccess(t *testing.T) {
	t.Parallel()
	get := func(url string) (int, string) {
		t.Helper()
		return httpGet(t, url+"/metrics")
	}
	maddr := testkit.FreeAddr(t)
	url, _ := serveBinary(t, nil, "--db", filepath.Join(t.TempDir(), "m.db"), "--seed-demo", "never", "--metrics-addr", maddr)
	if code, _ := get(url); code != http.StatusNotFound {
		t.Errorf("--addr's /metrics with --metrics-addr: HTTP %d, want 404", code)
	}
	if code, body := get("http://" + maddr); code != http.StatusOK || !strings.Contains(body, "tessera_http_requests_total") {
		t.Errorf("--metrics-addr's /metrics: HTTP %d %.200q, want the metrics", code, body)
	}
	url, _ = serveBinary(t, []string{"TESSERA_METRICS_PUBLIC=true"}, "--db", filepath.Join(t.TempDir(), "p.db"), "--seed-demo", "never")
	if code, body := get(url); code != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Errorf("TESSERA_METRICS_PUBLIC=true: anonymous /metrics: HTTP %d %.200q, want the metrics", code, body)
	}
}

// TestServeMetricsSettingsRefused: a broken or contradictory metrics
// setting is a usage error naming it, before anything is created.
func TestServeMetricsSettingsRefused(t *testing.T) {
	busy := busyAddr(t)
	wantServeRefused(t, busy, []serveRefusal{
		{nil, []string{"--metrics-addr", "nowhere"}, `--metrics-addr "nowhere" is not HOST:PORT`},
		{nil, []string{"--metrics-addr", busy}, "--metrics-addr " + `"` + busy + `" is --addr too`},
		{nil, []string{"--metrics-addr", "127.0.0.1:0", "--metrics-public"}, "--metrics-public and --metrics-addr exclude each other"},
		{[]string{"TESSERA_METRICS_PUBLIC=sometimes"}, nil, `TESSERA_METRICS_PUBLIC="sometimes"`},
	})
}
