package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/cli"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
)

// TestBackfillRecoveredInCLI: a failed backfill whose Retry failed rebuilt
// everything reads "FAILED (recovered by retry ID)" in `backfill list` and
// `backfill get`, and its --json carries recovered_by; before the retry it
// reads plain FAILED.
func TestBackfillRecoveredInCLI(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	flag := testkit.FlagFile(t, "fail")
	func(dialect db.Dialect) { // SQLite only for now: the restart (or the flag file) is not yet made per backend
		s := startServerOn(t, dialect, fmt.Sprintf(`
assets:
  rec.cmd:
    partitions: {static: [good1, bad1]}
    retries: {max_attempts: 1}
    executor:
      command: ['case "$TESSERA_PARTITIONS" in *bad*) if [ -e "$REC_FAIL" ]; then exit 1; fi;; esac; echo ok']
      shell: true
      env: {REC_FAIL: %q}
`, flag))
		code, out, errOut := s.cli(t, "backfill", "create", "rec.cmd", "--partitions", "good1,bad1", "--chunk-size", "1", "--wait")
		if code != cli.ExitFailed {
			t.Fatalf("create --wait: %d %q %q", code, out, errOut)
		}
		id := strings.Fields(out[strings.LastIndex(out, "backfill "):])[1]
		if code, out, _ = s.cli(t, "backfill", "get", id); code != 0 || !regexp.MustCompile(`(?m)^state\s+FAILED \(version \d+\)$`).MatchString(out) {
			t.Fatalf("get before the retry: %d %q", code, out)
		}
		os.Remove(flag)
		code, out, errOut = s.cli(t, "backfill", "retry-failed", id, "--request-id", "r1", "--wait", "--json")
		var child map[string]any
		if code != 0 || json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &child) != nil {
			t.Fatalf("retry-failed --wait: %d %q %q", code, out, errOut)
		}
		childID, _ := child["id"].(string)
		want := "FAILED (recovered by retry " + childID + ")"
		if code, out, _ = s.cli(t, "backfill", "get", id); code != 0 || !regexp.MustCompile(`(?m)^state\s+`+regexp.QuoteMeta(want)+` \(version \d+\)$`).MatchString(out) {
			t.Errorf("get: %d %q, want state %s", code, out, want)
		}
		if code, out, _ = s.cli(t, "backfill", "list"); code != 0 || !regexp.MustCompile(`(?m)^`+id+`\s+`+regexp.QuoteMeta(want)+`\s`).MatchString(out) {
			t.Errorf("list: %d %q, want %s's state %s", code, out, id, want)
		}
		var b map[string]any
		if code, out, _ = s.cli(t, "backfill", "get", id, "--json"); code != 0 || json.Unmarshal([]byte(out), &b) != nil || b["recovered_by"] != childID {
			t.Errorf("get --json: %d %q, want recovered_by %s", code, out, childID)
		}
	}(db.SQLite)
}
