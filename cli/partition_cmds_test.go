package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/cli"
	"github.com/tessera-dev/tessera/testkit"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// TestReportWatermarkRefusesPartitionFlags: `tessera report ASSET
// --watermark KEY` records a key only, so a flag that describes reported
// partitions (--status failed --error ... above all) was dropped without a
// word: the watermark moved and the failure the user meant to report was
// never recorded. Each is now a usage error (exit 2) that names the flags
// given and the two commands to run instead, and nothing reaches the store.
func TestReportWatermarkRefusesPartitionFlags(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	env := testkit.WithAssets(t,
		testkit.Asset("w.daily", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "executor: {demo: {duration: 1s}}"),
	)
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
	if code, out, errOut := report("2025-01-09", "--status", "failed", "--error", "source file missing"); code != 0 || !strings.Contains(out, "recorded 1 failed partition of w.daily") {
		t.Fatalf("the failure on its own: exit %d %q %q", code, out, errOut)
	}
	if code, out, errOut := report("2025-01-10", "2025-01-11"); code != 0 || !strings.Contains(out, "recorded 2 materialized partitions of w.daily") {
		t.Fatalf("two partitions: exit %d %q %q", code, out, errOut)
	}
}

// TestStatusLagReadsLikeTheWebPage: tessera status writes lag as the status
// page does ("206 days 6 h"), not as a Go duration ("4950h38m4s"); --json
// keeps lag_seconds.
func TestStatusLagReadsLikeTheWebPage(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		s := startServerOn(t, dialect, `
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
		assets, out := statusJSON(t, s, 2)
		lag := map[string]int64{}
		for _, a := range assets {
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

		code, out, errOut := s.cli(t, "status")
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
	})
}

// TestStatusSaysOverPolicyWithoutAFreshPartition: an asset with a freshness
// policy and no fresh partition (never built, or every partition stale) is
// over its policy on the status page and in status --json, but tessera
// status printed its LAG as a bare "-", hiding it.
func TestStatusSaysOverPolicyWithoutAFreshPartition(t *testing.T) {
	t.Parallel()
	s := startServerWith(t, `
assets:
  t.daily:
    partitions: {daily: {start: 2025-01-01}}
    freshness: {max_lag: 26h}
    code_version: v2
    executor: {demo: {duration: 1ms}}
  t.never:
    partitions: {daily: {start: 2025-01-01}}
    freshness: {max_lag: 26h}
    executor: {demo: {duration: 1ms}}
`)
	// Built with the old code version: its data is stale (CODE_CHANGED).
	if code, out, errOut := s.cli(t, "report", "t.daily", "2025-01-01", "--code-version", "v1"); code != 0 {
		t.Fatalf("report: %d %q %q", code, out, errOut)
	}
	assets, out := statusJSON(t, s, 2)
	for _, a := range assets {
		if a.LagSeconds != nil || !a.OverPolicy {
			t.Fatalf("status --json: %s should have no lag and be over its policy: %s", a.Asset, out)
		}
	}
	code, out, errOut := s.cli(t, "status")
	if code != 0 {
		t.Fatalf("status: %d %q %q", code, out, errOut)
	}
	for _, asset := range []string{"t.daily", "t.never"} {
		var row string
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[1] == asset {
				row = l
			}
		}
		if !strings.Contains(row, "  - (over policy: max lag 26h)  ") {
			t.Errorf("the row of %s does not say it is over its policy: %q\n%s", asset, row, out)
		}
	}
}

// TestReportSaysWhatWasNew: tessera report said "(0 already recorded)" on
// every first report, and "recorded 0 materialized partitions" when sent
// again; it now says only what holds: what it recorded, what was already
// recorded beside it, or that nothing was new.
func TestReportSaysWhatWasNew(t *testing.T) {
	t.Parallel()
	s := startServerWith(t, `
assets:
  t.regions:
    partitions: {static: [eu, us, apac]}
    executor: {demo: {duration: 1ms}}
`)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eu", "us", "--run-id", "r1"}, "recorded 2 materialized partitions of t.regions\n"},
		{[]string{"eu", "us", "--run-id", "r1"}, "recorded nothing new: 2 materialized partitions of t.regions were already recorded\n"},
		{[]string{"eu", "--run-id", "r1"}, "recorded nothing new: 1 materialized partition of t.regions was already recorded\n"},
		{[]string{"eu", "apac", "--run-id", "r1"}, "recorded 1 materialized partition of t.regions (1 already recorded)\n"},
		{[]string{"us", "--status", "failed", "--error", "late", "--run-id", "r2"}, "recorded 1 failed partition of t.regions\n"},
	} {
		if code, out, errOut := s.cli(t, append([]string{"report", "t.regions"}, c.args...)...); code != 0 || out != c.want {
			t.Errorf("report %v: %d %q %q, want %q", c.args, code, out, errOut, c.want)
		}
	}
}

// TestEmptyIdempotencyKeyIsRefused: `--idempotency-key "$KEY"` with KEY
// unset sent no key at all, so the retry the user counted on being safe
// launched a second backfill (or recorded the report twice). An empty or
// blank --idempotency-key is now a usage error (exit 2) that says so, and
// nothing reaches the server.
func TestEmptyIdempotencyKeyIsRefused(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	env, tok := dailyServer(t, "k.daily")
	count := func(table string) int { return rowCount(t, env, table) }
	events := count("events")
	for _, args := range [][]string{
		{"backfill", "create", "k.daily", "--start", "2025-01-01", "--end", "2025-01-02", "--idempotency-key", ""},
		{"backfill", "create", "k.daily", "--start", "2025-01-01", "--end", "2025-01-02", "--idempotency-key", "  "},
		{"report", "k.daily", "2025-01-01", "--idempotency-key", ""},
	} {
		code, out, errOut := run(t, append(args, "--server", env.URL, "--token", tok)...)
		if code != cli.ExitUsage || !strings.Contains(errOut, "--idempotency-key is empty") || !strings.Contains(errOut, "leave --idempotency-key out") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d saying --idempotency-key is empty", args, code, out, errOut, cli.ExitUsage)
		}
		if e := count("events"); e != events {
			t.Fatalf("%v: the refused command wrote %d events", args, e-events)
		}
	}
	if n := count("backfills"); n != 0 {
		t.Fatalf("refused creates made %d backfills", n)
	}
	// retry-failed's --request-id likewise: sent as given, the server's
	// refusal of an empty id names the flag.
	code, out, errOut := run(t, "backfill", "retry-failed", "bf_nope", "--request-id", "", "--server", env.URL, "--token", tok)
	if code != cli.ExitUsage || !strings.Contains(errOut, "--request-id is empty") {
		t.Errorf("retry-failed --request-id \"\": exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestEmptyRangeFlagIsRefused: `--start "$START" --end 2025-01-05` with
// START unset read as no --start, and launched a backfill from the asset's
// first partition: far more than asked for. An empty or blank --start or
// --end (or --partitions-file) is now a usage error (exit 2) that says
// what to give or to leave the flag out, and nothing is created.
func TestEmptyRangeFlagIsRefused(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	env, tok := dailyServer(t, "r.daily")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"backfill", "create", "r.daily", "--start", "", "--end", "2025-01-05"}, "--start is empty"},
		{[]string{"backfill", "create", "r.daily", "--start", "2025-01-05", "--end", " "}, "--end is empty"},
		{[]string{"backfill", "create", "r.daily", "--missing", "--end", ""}, "--end is empty"},
		{[]string{"backfill", "preview", "r.daily", "--start", "", "--end", "2025-01-05"}, "--start is empty"},
		{[]string{"backfill", "create", "r.daily", "--partitions-file", ""}, "--partitions-file is empty"},
	} {
		code, out, errOut := run(t, append(tc.args, "--server", env.URL, "--token", tok)...)
		if code != cli.ExitUsage || out != "" || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "leave") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d saying %q", tc.args, code, out, errOut, cli.ExitUsage, tc.want)
		}
	}
	if n := rowCount(t, env, "backfills"); n != 0 {
		t.Fatalf("refused commands made %d backfills", n)
	}
}

// dailyServer is a server whose workspace is the daily asset key of
// January 2025, its engine running with a no-op executor, and an admin's
// token.
func dailyServer(t *testing.T, key string) (*testkit.Env, string) {
	t.Helper()
	env := testkit.WithAssets(t,
		testkit.Asset(key, "{daily: {start: 2025-01-01, end: 2025-02-01}}", "executor: {demo: {duration: 1s}}"),
	)
	env.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}})
	return env, env.AdminToken()
}

// rowCount counts the rows of table in env's store.
func rowCount(t *testing.T, env *testkit.Env, table string) int {
	t.Helper()
	var n int
	if err := env.Store.RawReader().GetContext(context.Background(), &n, "SELECT COUNT(*) FROM "+table); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPartitionsFileProblemsInWords: a --partitions-file that cannot be
// read said Go's words ("--partitions-file: open F: no such file or
// directory", "read F: is a directory", and for a line over 1 MiB
// "bufio.Scanner: token too long"); each now names the flag and the file
// and says what is wrong, before anything is sent.
func TestPartitionsFileProblemsInWords(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	dir := t.TempDir()
	long := filepath.Join(dir, "long.txt")
	if err := os.WriteFile(long, []byte(strings.Repeat("k", 2<<20)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.txt")
	for _, tc := range []struct{ file, want string }{
		{missing, "--partitions-file " + missing + ": no such file or directory"},
		{dir, "--partitions-file " + dir + ": is a directory"},
		{long, "--partitions-file " + long + ": a line is longer than 1 MiB; give one partition key a line"},
	} {
		code, out, errOut := run(t, "backfill", "preview", "a.daily", "--partitions-file", tc.file, "--server", "http://127.0.0.1:1", "--token", "tsr_x")
		if code != cli.ExitUsage || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("--partitions-file %s: exit %d %q %q, want 2 saying %q", tc.file, code, out, errOut, tc.want)
		}
		for _, leak := range []string{"open ", "read ", "bufio"} {
			if strings.Contains(errOut, leak) {
				t.Errorf("--partitions-file %s: %q says Go's %q", tc.file, errOut, leak)
			}
		}
	}
}

// statusAsset is an asset of tessera status --json.
type statusAsset struct {
	Asset      string `json:"asset"`
	LagSeconds *int64 `json:"lag_seconds"`
	Policy     string `json:"freshness_policy"`
	OverPolicy bool   `json:"over_policy"`
}

// statusJSON runs tessera status --json against s and reads its assets (and
// the output, for messages); it fails the test unless the command exits 0
// with n assets.
func statusJSON(t *testing.T, s server, n int) ([]statusAsset, string) {
	t.Helper()
	code, out, errOut := s.cli(t, "status", "--json")
	var st struct {
		Assets []statusAsset `json:"assets"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Assets) != n {
		t.Fatalf("status --json: %d %q %q", code, out, errOut)
	}
	return st.Assets, out
}
