package cli_test

import (
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/cli"
)

// A wrong number of arguments or a flag value of the wrong type is a usage
// error (exit 2) that says what is wrong in the user's words and how to do
// it right: the command's usage line or the nearest flag, and its --help.
func TestCLIUsageErrorsSayHowToFix(t *testing.T) {
	noConfig(t)
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"taint", "raw.events"}, []string{"accepts 2 arg(s), received 1", "usage: tessera taint ASSET PARTITION", `see "tessera taint --help"`}},
		{[]string{"workspace", "validate"}, []string{"usage: tessera workspace validate FILE", `"tessera workspace validate --help"`}},
		{[]string{"backfill", "get"}, []string{"usage: tessera backfill get ID"}},
		{[]string{"status", "extra"}, []string{`tessera status takes no arguments, got "extra"`, "usage: tessera status"}},
		{[]string{"migrate", "extra"}, []string{`tessera migrate takes no arguments, got "extra"`}},
		{[]string{"backfill", "preview", "t.daily", "--missing", "--chunk-size", "ten"}, []string{`--chunk-size "ten" is not a whole number`, `see "tessera backfill preview --help"`}},
		{[]string{"backfill", "preview", "t.daily", "--missing", "--chunk-size", "99999999999999999999"}, []string{`--chunk-size "99999999999999999999" is out of range`}},
		{[]string{"backfill", "create", "t.daily", "--missing", "--wait=maybe"}, []string{`--wait "maybe" is not true or false`}},
		{[]string{"backfill", "preview", "t.daily", "--chunksize", "3"}, []string{"unknown flag: --chunksize (did you mean --chunk-size?)", `see "tessera backfill preview --help"`}},
		{[]string{"backfill", "create", "t.daily", "--partition"}, []string{"flag needs an argument: --partition", `see "tessera backfill create --help"`}},
		{[]string{"serve", "--lease-ttl", "5"}, []string{"--lease-ttl"}},
	}
	for _, tc := range cases {
		code, out, errOut := run(t, tc.args...)
		if code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want 2 (stderr %q, stdout %q)", tc.args, code, errOut, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, errOut, w)
			}
		}
		if strings.Contains(errOut, "strconv.") {
			t.Errorf("%v: Go internals in %q", tc.args, errOut)
		}
	}
}
