package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/cli"
)

// A static key may contain a comma, so --partitions a,b cannot name it:
// --partition KEY (repeatable) takes a key as written. --partitions is
// repeatable too, and every key of every repetition is kept (before, the
// last --partitions won and the others were dropped without a word).
// Errors the server reports about one key or dimension value name the flag.
func TestCLIExplicitKeysRepeatableAndWithCommas(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	s := startServerWith(t, `
assets:
  t.regions:
    partitions: {static: ["eu,north", "eu,south", us, apac]}
    executor: {demo: {duration: 1ms}}
  t.multi:
    partitions:
      multi:
        date: {daily: {start: 2025-01-01}}
        region: {static: [eu, us]}
    executor: {demo: {duration: 1ms}}
  t.multi2:
    partitions:
      multi:
        date: {daily: {start: 2025-01-01}}
        region: {static: ["eu,north", "eu,south", us, apac]}
    executor: {demo: {duration: 1ms}}
`)
	preview := func(args ...string) (keys []string, total float64) {
		t.Helper()
		code, out, errOut := s.cli(t, append([]string{"backfill", "preview", "t.regions", "--chunk-size", "100", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", args, code, errOut)
		}
		var p struct {
			Total      float64 `json:"total_partitions"`
			FirstChunk struct {
				Keys []string `json:"keys"`
			} `json:"first_chunk"`
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("%v: %v in %s", args, err, out)
		}
		return p.FirstChunk.Keys, p.Total
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--partition", "eu,north"}, "eu,north"},
		{[]string{"--partition", "eu,north", "--partition", "eu,south"}, "eu,north;eu,south"},
		{[]string{"--partitions", "us", "--partitions", "apac"}, "us;apac"},
		{[]string{"--partitions", "us,apac", "--partition", "eu,south"}, "us;apac;eu,south"},
		{[]string{"--partition", "eu,south", "--partitions", "us"}, "eu,south;us"},
	}
	for _, tc := range cases {
		keys, total := preview(tc.args...)
		if got := strings.Join(keys, ";"); got != tc.want || int(total) != len(keys) {
			t.Errorf("%v: keys %q (total %v), want %q", tc.args, got, total, tc.want)
		}
	}
	// A key with a comma is not a key of --partitions: the server refuses
	// it, naming the flags and the key.
	bad := []struct {
		args []string
		msg  string
	}{
		{[]string{"backfill", "preview", "t.regions", "--partitions", "eu,north"}, `--partition/--partitions/--partitions-file: asset t.regions: partition key "eu" is not valid`},
		{[]string{"backfill", "preview", "t.regions", "--partition", "us", "--partitions-file", "keys.txt"}, "--partition/--partitions and --partitions-file both choose keys; use one"},
		{[]string{"backfill", "preview", "t.regions", "--partition", "us", "--missing"}, "cannot be combined"},
		{[]string{"backfill", "preview", "t.multi", "--missing", "--dimension", "region=mars"}, `--dimension/--dimension-value: asset t.multi, dimension region: partition key "mars"`},
	}
	// The same for dimension values: --dimension-value NAME=VALUE takes
	// the value as written; --dimension NAME=V1,V2 splits.
	dimPreview := func(args ...string) float64 {
		t.Helper()
		code, out, errOut := s.cli(t, append([]string{"backfill", "preview", "t.multi2", "--missing", "--start", "2025-01-01", "--end", "2025-01-02", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", args, code, errOut)
		}
		var p struct {
			Total float64 `json:"total_partitions"`
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("%v: %v in %s", args, err, out)
		}
		return p.Total
	}
	for _, tc := range []struct {
		args []string
		want float64
	}{
		{[]string{"--dimension-value", "region=eu,north"}, 2},
		{[]string{"--dimension-value", "region=eu,north", "--dimension-value", "region=eu,south"}, 4},
		{[]string{"--dimension", "region=us,apac"}, 4},
		{[]string{"--dimension", "region=us", "--dimension-value", "region=eu,south"}, 4},
	} {
		if got := dimPreview(tc.args...); got != tc.want {
			t.Errorf("%v: %v partitions, want %v", tc.args, got, tc.want)
		}
	}
	bad = append(bad,
		struct {
			args []string
			msg  string
		}{[]string{"backfill", "preview", "t.multi2", "--missing", "--dimension", "region=eu,north"}, `--dimension/--dimension-value: asset t.multi2, dimension region: partition key "eu" is not valid`},
		struct {
			args []string
			msg  string
		}{[]string{"backfill", "preview", "t.multi2", "--missing", "--dimension-value", "region"}, `--dimension-value "region" is not NAME=VALUE`},
	)
	for _, tc := range bad {
		code, _, errOut := s.cli(t, tc.args...)
		if code != cli.ExitUsage || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d %q, want 2 with %q", tc.args, code, errOut, tc.msg)
		}
	}
}
