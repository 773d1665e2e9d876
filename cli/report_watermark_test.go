package cli_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/cli"
	"github.com/tessera-dev/tessera/testkit"
)

// TestReportWatermarkRefusesPartitionFlags: `tessera report ASSET
// --watermark KEY` records a key only, so a flag that describes reported
// partitions (--status failed --error ... above all) was dropped without a
// word: the watermark moved and the failure the user meant to report was
// never recorded. Each is now a usage error (exit 2) that names the flags
// given and the two commands to run instead, and nothing reaches the store.
func TestReportWatermarkRefusesPartitionFlags(t *testing.T) {
	t.Setenv("TESSERA_CONFIG", filepath.Join(t.TempDir(), "none.json"))
	t.Setenv("TESSERA_URL", "")
	t.Setenv("TESSERA_TOKEN", "")
	env := testkit.New(t, testkit.Options{WorkspaceYAML: `assets:
  w.daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    executor: {demo: {duration: 1s}}
`})
	tok := env.AdminToken()
	report := func(args ...string) (int, string, string) {
		return run(t, append(append([]string{"report", "w.daily"}, args...), "--server", env.URL, "--token", tok)...)
	}
	count := func(table string) int {
		var n int
		if err := env.Store.RawReader().GetContext(context.Background(), &n, "SELECT COUNT(*) FROM "+table); err != nil {
			t.Fatal(err)
		}
		return n
	}
	watermark := func() (int, any) {
		resp, body := testkit.APIRequest(t, env.URL, tok, "GET", "/api/v1/assets/w.daily/watermark", "")
		return resp.StatusCode, body
	}
	events, statuses := count("events"), count("partition_status")

	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--watermark", "2025-01-09", "--status", "failed", "--error", "source file missing"}, []string{
			"--status and --error do not go with --watermark", "nothing was reported",
			"tessera report w.daily --watermark 2025-01-09,",
			"tessera report w.daily PARTITION --status failed --error 'source file missing'"}},
		{[]string{"--watermark", "2025-01-09", "--error", "boom"}, []string{"--error does not go with --watermark", "without it:"}},
		// Even the default status, given explicitly, is not silently taken.
		{[]string{"--watermark", "2025-01-09", "--status", "materialized"}, []string{"--status does not go with --watermark"}},
		{[]string{"--watermark", "2025-01-09", "--metadata", `{"rows": 3}`, "--run-id", "r1", "--at", "2025-01-10T00:00:00Z", "--code-version", "v2", "--idempotency-key", "k1"},
			[]string{"--metadata, --run-id, --at, --code-version and --idempotency-key do not go with --watermark"}},
		{[]string{"--watermark", ""}, []string{"--watermark needs a KEY", "tessera report w.daily --watermark KEY"}},
	}
	for _, tc := range cases {
		code, out, errOut := report(tc.args...)
		if code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want %d (stdout %q, stderr %q)", tc.args, code, cli.ExitUsage, out, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, errOut, w)
			}
		}
		if out != "" {
			t.Errorf("%v: stdout %q on a refusal", tc.args, out)
		}
		if code, body := watermark(); code != http.StatusNotFound {
			t.Fatalf("%v: the refused report set a watermark: %d %v", tc.args, code, body)
		}
		if e, s := count("events"), count("partition_status"); e != events || s != statuses {
			t.Fatalf("%v: the refused report wrote: events %d -> %d, partition status rows %d -> %d", tc.args, events, e, statuses, s)
		}
	}

	// The two commands the message gives do what was meant.
	if code, out, errOut := report("--watermark", "2025-01-09"); code != 0 || !strings.Contains(out, "watermark of w.daily is now 2025-01-09") {
		t.Fatalf("--watermark alone: exit %d %q %q", code, out, errOut)
	}
	if code, body := watermark(); code != http.StatusOK || body.(map[string]any)["partition"] != "2025-01-09" {
		t.Fatalf("watermark after --watermark alone: %d %v", code, body)
	}
	if code, out, errOut := report("2025-01-09", "--status", "failed", "--error", "source file missing"); code != 0 || !strings.Contains(out, "recorded 1 failed partition(s) of w.daily") {
		t.Fatalf("the failure on its own: exit %d %q %q", code, out, errOut)
	}
}
