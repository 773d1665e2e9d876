package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// TestScheduleAcrossKillsAndDowntime runs a per-second schedule in the real
// binary, kills it with SIGKILL at random moments (a tick's backfill and
// its record are one transaction: a kill never leaves one without the
// other), then stops it for 5 s and starts it again. From the database
// afterwards: every second from the first tick to the last has exactly one
// tick (no hole, none twice); each launched tick has exactly one backfill
// and each backfill of the schedule one launched tick; the ticks that fell
// while it was down were caught up within the window, at most max_ticks of
// them, and the older recorded as missed.
func TestScheduleAcrossKillsAndDowntime(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws.yaml")
	if err := os.WriteFile(ws, []byte(`
assets:
  tick.target:
    partitions: {static: [only]}
    executor: {demo: {duration: 1ms}}
schedules:
  every_second:
    cron: "* * * * * *"
    assets: [tick.target]
    overlap: allow
    catchup: {window: 3s, max_ticks: 2}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(dir, "tessera.db")
	addr := testkit.FreeAddr(t)
	srv := &server{t: t, bin: bin, addr: addr, args: []string{"serve", "--addr", addr, "--db", dbPath, "--workspace", ws}}
	srv.start()
	t.Cleanup(srv.kill)
	tok, err := exec.Command(bin, "token", "create", "--db", dbPath, "--user", "admin", "--name", "ticks").Output()
	if err != nil {
		t.Fatalf("token create: %v\n%s", err, srv.tail())
	}
	token := strings.TrimSpace(string(tok))
	launched := func() int {
		_, out := api(t, "GET", "http://"+addr+"/api/v1/schedules/every_second/ticks?outcome=launched&limit=500", token, nil)
		ts, _ := out["ticks"].([]any)
		return len(ts)
	}
	testkit.Eventually(t, 30*time.Second, "three ticks launched", func() bool { return launched() >= 3 })

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	for range 3 {
		// A sleep: killing at a random moment of the ticks is the scenario.
		time.Sleep(time.Duration(100+rng.IntN(900)) * time.Millisecond)
		srv.kill()
		srv.start()
	}
	// Down for 5 s: the wait is the scenario.
	srv.stop()
	stoppedAt := time.Now()
	time.Sleep(5 * time.Second)
	restartedAt := time.Now()
	srv.start()
	before := launched()
	testkit.Eventually(t, 30*time.Second, "ticks after the restart", func() bool { return launched() >= before+3 })
	srv.stop()

	store := teststore.OpenAt(t, dbPath)
	var ticks []struct {
		ID           string  `db:"id"`
		ScheduledFor int64   `db:"scheduled_for"`
		Outcome      string  `db:"outcome"`
		Reason       *string `db:"reason"`
		BackfillID   *string `db:"backfill_id"`
	}
	if err := store.RawReader().Select(&ticks, `SELECT id, scheduled_for, outcome, reason, backfill_id FROM schedule_ticks
		WHERE schedule='every_second' AND manual=0 ORDER BY scheduled_for`); err != nil {
		t.Fatal(err)
	}
	if len(ticks) < 10 {
		t.Fatalf("%d ticks recorded, want at least 10", len(ticks))
	}
	byBackfill := map[string]string{}
	inGap, launchedInGap := 0, 0
	for i, tk := range ticks {
		if i > 0 && tk.ScheduledFor != ticks[i-1].ScheduledFor+1000 {
			t.Errorf("ticks %s then %s: a hole or a tick twice", ticks[i-1].ID, tk.ID)
		}
		if want := fmt.Sprintf("every_second:%d", tk.ScheduledFor/1000); tk.ID != want {
			t.Errorf("tick id %s, want %s", tk.ID, want)
		}
		switch tk.Outcome {
		case db.TickLaunched:
			if tk.BackfillID == nil {
				t.Errorf("tick %s launched without a backfill", tk.ID)
				continue
			}
			if other, ok := byBackfill[*tk.BackfillID]; ok {
				t.Errorf("ticks %s and %s share backfill %s", other, tk.ID, *tk.BackfillID)
			}
			byBackfill[*tk.BackfillID] = tk.ID
		case db.TickSkipped:
			if tk.Reason == nil || !strings.Contains(*tk.Reason, "missed") {
				t.Errorf("tick %s skipped (%v), want missed outside the catch-up window", tk.ID, tk.Reason)
			}
		default:
			t.Errorf("tick %s: %s %v", tk.ID, tk.Outcome, tk.Reason)
		}
		// The ticks that fell while the binary was stopped.
		if tk.ScheduledFor > stoppedAt.UnixMilli()+1000 && tk.ScheduledFor <= restartedAt.UnixMilli() {
			inGap++
			if tk.Outcome == db.TickLaunched {
				launchedInGap++
			}
		}
	}
	if inGap < 4 {
		t.Errorf("%d ticks recorded for the 5 s the binary was down, want at least 4", inGap)
	}
	if launchedInGap < 1 || launchedInGap > 2 {
		t.Errorf("%d of the %d ticks of the downtime launched, want 1 or 2 (max_ticks 2, window 3s)", launchedInGap, inGap)
	}
	var made []struct {
		ID  string  `db:"id"`
		Key *string `db:"request_key"`
	}
	if err := store.RawReader().Select(&made, `SELECT id, request_key FROM backfills WHERE created_by='schedule:every_second'`); err != nil {
		t.Fatal(err)
	}
	if len(made) != len(byBackfill) {
		t.Errorf("%d backfills of the schedule, %d launched ticks", len(made), len(byBackfill))
	}
	for _, b := range made {
		tick, ok := byBackfill[b.ID]
		if !ok {
			t.Errorf("backfill %s (key %v) has no launched tick", b.ID, b.Key)
		} else if b.Key == nil || !strings.HasSuffix(*b.Key, tick) {
			t.Errorf("backfill %s: request key %v, want the tick id %s", b.ID, b.Key, tick)
		}
	}
	t.Logf("%d ticks, %d launched; %d in the downtime, %d of them launched", len(ticks), len(byBackfill), inGap, launchedInGap)
}
