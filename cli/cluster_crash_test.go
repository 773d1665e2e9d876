package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/testkit/pgtest"
	"github.com/tessera-dev/tessera/testkit/proc"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// crashWorkspace is an asset of 5,000 daily partitions whose command logs
// "start KEY PID" and "end KEY PID" around each partition it builds, to
// the file $BUILD_LOG, and reports each built partition (checkpoint).
const crashWorkspace = `assets:
  crash.cmd:
    partitions: {daily: {start: 2010-01-01, end: 2023-09-10}}
    retries: {max_attempts: 1}
    executor:
      shell: true
      env: {BUILD_LOG: %q}
      command: ['for k in $TESSERA_PARTITIONS; do echo "start $k $$" >> "$BUILD_LOG"; sleep 0.02; echo "end $k $$" >> "$BUILD_LOG"; echo "{\"partition\":\"$k\",\"status\":\"materialized\"}" >> "$TESSERA_REPORT"; done']
`

// TestClusterCrashThreeInstances: three ` + "`tessera serve`" + ` processes on one
// PostgreSQL database share a 5,000-partition backfill while a random one
// of them is killed (SIGKILL) at random moments and started again. At the
// end the backfill succeeded, every partition is materialized, no
// partition was built by two attempts at once nor a reported one built
// again (the command's own log), no chunk was planned twice nor any
// attempt recorded twice (the events), and the events replay to the same
// projections.
func TestClusterCrashThreeInstances(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url := pgtest.URL(t)
	buildLog := filepath.Join(dir, "builds.log")
	ws := filepath.Join(dir, "ws.yaml")
	if err := os.WriteFile(ws, []byte(fmt.Sprintf(crashWorkspace, buildLog)), 0o644); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(dir, "pw")
	os.WriteFile(pw, []byte("correct-horse-battery\n"), 0o600)
	mustRun(t, "migrate", "--db", url)
	tok := userToken(t, url, pw, "ops", "operator", "crash")
	// The instances share one machine: their commands' reports (and the
	// files that say which processes to kill after a crash) in one folder.
	tmp := filepath.Join(dir, "tmp")
	os.MkdirAll(tmp, 0o755)
	env := []string{"TESSERA_SESSION_KEYS=0123456789abcdef-crash-test", "TESSERA_LEASE_TTL=1s", "TMPDIR=" + tmp}
	addrs := make([]string, 3)
	procs := make([]*exec.Cmd, 3)
	logs := make([]string, 3)
	start := func(i int) {
		procs[i], logs[i] = startServe(t, env, "--addr", addrs[i], "--db", url, "--workspace", ws, "--max-concurrent-runs", "8")
		waitReady(t, http.DefaultClient, "http://"+addrs[i], logs[i])
	}
	for i := range addrs {
		addrs[i] = testkit.FreeAddr(t)
		start(i)
	}
	code, out, errOut := run(t, "backfill", "create", "crash.cmd", "--start", "2010-01-01", "--end", "2023-09-09", "--chunk-size", "10", "--concurrency", "24", "--json",
		"--server", "http://"+addrs[0], "--token", tok)
	var created struct {
		ID              string `json:"id"`
		TotalPartitions int64  `json:"total_partitions"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &created) != nil || created.ID == "" {
		t.Fatalf("backfill create: %d %q %q", code, out, errOut)
	}
	if created.TotalPartitions != 5000 {
		t.Fatalf("%d partitions, want 5000", created.TotalPartitions)
	}
	store := teststore.OpenAt(t, url)
	ctx := context.Background()
	done := func() bool {
		b, err := store.Backfill(ctx, created.ID)
		if err != nil {
			t.Fatal(err)
		}
		return db.BackfillTerminal(b.State)
	}
	// Chaos: a random instance killed at a random moment, then started
	// again, a few times while the backfill runs.
	kills := 0
	for range 4 {
		time.Sleep(time.Duration(150+rand.IntN(550)) * time.Millisecond) // a random moment, on purpose
		if done() {
			break
		}
		i := rand.IntN(3)
		if err := procs[i].Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		pid := procs[i].Process.Pid
		testkit.Eventually(t, 30*time.Second, "the killed server to die", func() bool { return !proc.Alive(pid) })
		kills++
		start(i)
	}
	if kills < 2 {
		t.Fatalf("the backfill ended after %d kills; make it longer so that the test kills instances while it runs", kills)
	}
	testkit.Eventually(t, 180*time.Second, "the backfill to end", done)
	b, err := store.Backfill(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if b.State != db.BackfillSucceeded || b.PartitionsMaterialized != 5000 {
		t.Fatalf("backfill %s with %d partitions materialized, want SUCCEEDED and 5000", b.State, b.PartitionsMaterialized)
	}
	var mat int64
	if err := store.RawReader().Get(&mat, `SELECT COUNT(*) FROM partition_status_all s JOIN assets a ON a.id = s.asset_id WHERE a.key = 'crash.cmd' AND s.status = 'materialized'`); err != nil {
		t.Fatal(err)
	}
	if mat != 5000 {
		t.Errorf("%d partitions materialized, want 5000", mat)
	}
	rebuilt := checkBuildLog(t, buildLog, 5000)
	checkEventsOnce(t, store, created.ID, b.TotalChunks)
	var interrupted int
	if err := store.RawReader().Get(&interrupted, `SELECT COUNT(*) FROM attempts WHERE state = 'interrupted'`); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d kills, %d attempts interrupted and taken over, %d partitions built again", kills, interrupted, rebuilt)
	// A partition an interrupted attempt reported is not built again: only
	// one killed between its "end" line and its report line is, at most
	// one an attempt.
	if rebuilt > interrupted {
		t.Errorf("%d partitions built to their end twice, more than the %d interrupted attempts: the reported ones were built again", rebuilt, interrupted)
	}

	teststore.ReplayEquals(t, store)
}

// checkBuildLog reads the commands' log: every key was built to its end at
// least once, and no two processes built one key at once. A process's
// interval for a key runs from its start line to its end line or, when it
// was killed first, to its last line anywhere in the log (the last moment
// it is known alive); line order is time order (appends). It answers how
// many keys were built to their end more than once.
func checkBuildLog(t *testing.T, path string, keys int) (rebuilt int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type span struct{ from, to int }
	spans := map[string]map[string]*span{} // key → pid → span
	lastSeen := map[string]int{}           // pid → its last line
	ended := map[string]int{}
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			t.Fatalf("build log line %d: %q", n, sc.Text())
		}
		what, key, pid := fs[0], fs[1], fs[2]
		lastSeen[pid] = n
		if spans[key] == nil {
			spans[key] = map[string]*span{}
		}
		switch what {
		case "start":
			if spans[key][pid] != nil {
				t.Errorf("process %s started %s twice", pid, key)
			}
			spans[key][pid] = &span{from: n, to: -1}
		case "end":
			if s := spans[key][pid]; s != nil {
				s.to = n
			}
			ended[key]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ended) != keys {
		t.Errorf("%d keys built to their end, want %d", len(ended), keys)
	}
	overlaps := 0
	for key, byPid := range spans {
		var ss []span
		for pid, s := range byPid {
			if s.to < 0 {
				s.to = lastSeen[pid]
			}
			ss = append(ss, *s)
		}
		for i := range ss {
			for j := i + 1; j < len(ss); j++ {
				if ss[i].from < ss[j].to && ss[j].from < ss[i].to {
					overlaps++
					if overlaps <= 10 {
						t.Errorf("%s built by two processes at once: lines %d–%d and %d–%d", key, ss[i].from, ss[i].to, ss[j].from, ss[j].to)
					}
				}
			}
		}
	}
	t.Logf("build log: %d lines, %d keys", n, len(spans))
	for _, n := range ended {
		if n > 1 {
			rebuilt++
		}
	}
	return rebuilt
}

// payloadOf decodes an event's JSON payload as a P.
func payloadOf[P any](t *testing.T, payload string) P {
	t.Helper()
	var p P
	if err := json.Unmarshal([]byte(payload), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkEventsOnce checks backfill id's events: each chunk planned once,
// one run per chunk, each attempt started once and finished once.
func checkEventsOnce(t *testing.T, store *db.Store, id string, chunks int64) {
	t.Helper()
	type ev struct {
		Type    string `db:"type"`
		Payload string `db:"payload"`
	}
	var evs []ev
	if err := store.RawReader().Select(&evs, `SELECT type, payload FROM events WHERE subject = ? AND type IN (?, ?, ?) ORDER BY id`,
		"backfill:"+id, db.EvRunsPlanned, db.EvAttemptsStarted, db.EvAttemptsFinished); err != nil {
		t.Fatal(err)
	}
	planned := map[int64]int{}
	started, finished := map[string]int{}, map[string]int{}
	for _, e := range evs {
		switch e.Type {
		case db.EvRunsPlanned:
			for _, r := range payloadOf[db.RunsPlanned](t, e.Payload).Runs {
				planned[r.Chunk]++
			}
		case db.EvAttemptsStarted:
			for _, a := range payloadOf[db.AttemptsStarted](t, e.Payload).Attempts {
				started[fmt.Sprintf("%s#%d", a.RunID, a.Attempt)]++
			}
		case db.EvAttemptsFinished:
			for _, a := range payloadOf[db.AttemptsFinished](t, e.Payload).Attempts {
				finished[fmt.Sprintf("%s#%d", a.RunID, a.Attempt)]++
			}
		}
	}
	if int64(len(planned)) != chunks {
		t.Errorf("%d chunks planned, want %d", len(planned), chunks)
	}
	for c, n := range planned {
		if n != 1 {
			t.Errorf("chunk %d planned %d times", c, n)
		}
	}
	for a, n := range started {
		if n != 1 || finished[a] != 1 {
			t.Errorf("attempt %s started %d times, finished %d times", a, n, finished[a])
		}
	}
	if len(finished) != len(started) {
		t.Errorf("%d attempts started, %d finished", len(started), len(finished))
	}
	var runs int64
	if err := store.RawReader().Get(&runs, `SELECT COUNT(*) FROM runs WHERE backfill_id = ?`, id); err != nil {
		t.Fatal(err)
	}
	if runs != chunks {
		t.Errorf("%d runs, want %d", runs, chunks)
	}
}
