package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/testkit/proc"
)

var retentionCLIWorkspace = scheduleCLIWorkspace + `
sensors:
  crm:
    assets: [t.regions]
`

// TestCLIRetentionPrunesAtStart: ticks and an event recorded by the real
// binary, the server stopped, that history backdated by 60 days and the
// server started again with --automation-retention 30d: it prunes them at
// start, and `schedule get` and `sensor get` (tables and --json) show how
// many and the retention; the pruned message id still answers as a
// duplicate and launches nothing; no tick is launched again.
func TestCLIRetentionPrunesAtStart(t *testing.T) {
	t.Parallel()               // no config: TestMain took it away from the whole process
	func(dialect db.Dialect) { // SQLite only for now: the restart (or the flag file) is not yet made per backend
		s := startServerOn(t, dialect, retentionCLIWorkspace)
		for range 2 {
			if code, out, errOut := s.cli(t, "schedule", "trigger", "nightly"); code != 0 {
				t.Fatalf("trigger: %d %q %q", code, out, errOut)
			}
		}
		if code, out, errOut := s.cli(t, "sensor", "send", "crm", "--message-id", "crm-1", "--partition", "eu"); code != 0 {
			t.Fatalf("send: %d %q %q", code, out, errOut)
		}
		code, out, _ := s.cli(t, "schedule", "get", "nightly")
		if code != 0 || !regexp.MustCompile(`history\s+no ticks pruned yet \(retention 90d\)`).MatchString(out) {
			t.Fatalf("get before: %d %q", code, out)
		}
		if err := s.Proc.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 30*time.Second, "the server to stop", func() bool { return !proc.Alive(s.Proc.Pid) })
		store, err := db.Open(s.DB)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.BackdateAutomationHistory(context.Background(), 60*24*time.Hour); err != nil {
			t.Fatal(err)
		}
		store.Close()
		_, logPath := startServe(t, nil, "--addr", strings.TrimPrefix(s.URL, "http://"), "--db", s.DB, "--workspace", s.WS, "--automation-retention", "30d")
		waitReady(t, http.DefaultClient, s.URL, logPath)

		testkit.Eventually(t, 30*time.Second, "the ticks pruned at start", func() bool {
			_, out, _ = s.cli(t, "schedule", "get", "nightly")
			return regexp.MustCompile(`(?m)^history\s+2 older ticks pruned \(retention 30d\)$`).MatchString(out)
		})
		code, out, _ = s.cli(t, "schedule", "get", "nightly", "--json")
		var sj struct {
			Retention string `json:"retention"`
			State     struct {
				PrunedTicks   int64 `json:"pruned_ticks"`
				TicksLaunched int64 `json:"ticks_launched"`
			} `json:"state"`
			LastTick any `json:"last_tick"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &sj) != nil || sj.Retention != "30d" || sj.State.PrunedTicks != 2 || sj.State.TicksLaunched != 2 || sj.LastTick != nil {
			t.Fatalf("get --json: %d %q", code, out)
		}
		testkit.Eventually(t, 30*time.Second, "the event pruned at start", func() bool {
			_, out, _ = s.cli(t, "sensor", "get", "crm")
			return regexp.MustCompile(`(?m)^history\s+1 older event pruned \(retention 30d\) \(their message ids still answer as duplicates\)$`).MatchString(out)
		})
		code, out, _ = s.cli(t, "sensor", "get", "crm", "--json")
		var sn struct {
			Retention string `json:"retention"`
			State     struct {
				PrunedEvents int64 `json:"pruned_events"`
			} `json:"state"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &sn) != nil || sn.Retention != "30d" || sn.State.PrunedEvents != 1 {
			t.Fatalf("sensor get --json: %d %q", code, out)
		}
		code, out, _ = s.cli(t, "sensor", "send", "crm", "--message-id", "crm-1", "--partition", "us", "--json")
		var again struct {
			Replayed bool `json:"replayed"`
			Event    struct {
				Pruned bool `json:"pruned"`
			} `json:"event"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &again) != nil || !again.Replayed || !again.Event.Pruned {
			t.Fatalf("the pruned message id again: %d %q", code, out)
		}
		code, out, _ = s.cli(t, "backfill", "list", "--json")
		var bfs struct {
			Backfills []map[string]any `json:"backfills"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &bfs) != nil || len(bfs.Backfills) != 3 {
			t.Fatalf("backfills: %d %q; want the 2 ticks' and the event's", code, out)
		}
	}(db.SQLite)
}
