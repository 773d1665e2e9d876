package jobs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/pgtest"
	"github.com/tessera-dev/tessera/testkit/poll"
	"github.com/tessera-dev/tessera/testkit/proc"
)

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pid
}

func waitDead(t *testing.T, what string, pid int) {
	t.Helper()
	ended := false
	defer func() {
		if !ended { // it outlived the wait: do not leave it behind
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	poll.Eventually(t, 20*time.Second, fmt.Sprintf("%s (pid %d) to end", what, pid), func() bool { return !proc.Alive(pid) })
	ended = true
}

// The attempt ends when the command's main process exits, whether or not
// it left a child behind, and the child is killed.
func TestCommandExecutorEndsWhenMainProcessExits(t *testing.T) {
	t.Parallel() // its commands and their children are its own: each waits out commandWaitDelay beside the other tests
	for name, script := range map[string]string{
		"child holds the output": "sleep 600 & echo $! > %s; echo started; exit 0",
		"child detached":         "sleep 600 > /dev/null 2>&1 & echo $! > %s; echo started; exit 0",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pid")
			report := filepath.Join(dir, "r.jsonl")
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			start := time.Now()
			res := CommandExecutor{}.Execute(ctx, Work{Partitions: []string{"k"}, ReportPath: report,
				Def: commandAsset([]string{fmt.Sprintf(script, pidFile)}, true)})
			if res.Err != nil || ctx.Err() != nil || !strings.Contains(res.Log, "started") {
				t.Fatalf("after %s: err %v, log %q", time.Since(start), res.Err, res.Log)
			}
			waitDead(t, "the command's child", readPid(t, pidFile))
			if _, err := os.Stat(procPath(report)); !os.IsNotExist(err) {
				t.Errorf("proc file left behind: %v", err)
			}
		})
	}
}

// killOrphans kills a recorded group, also once its leader is gone, and
// never a process that merely has the recorded number.
func TestKillOrphansChecksTheProcess(t *testing.T) {
	start := func(t *testing.T) (*exec.Cmd, int, string) {
		dir := t.TempDir()
		cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf("sleep 600 & echo $! > %s/child; wait", dir))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
		poll.Eventually(t, 20*time.Second, "the child", func() bool { b, _ := os.ReadFile(dir + "/child"); return len(b) > 0 && b[len(b)-1] == '\n' })
		report := filepath.Join(dir, "run-1.jsonl")
		if err := writeProcFile(procPath(report), cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		return cmd, readPid(t, dir+"/child"), report
	}
	t.Run("another start time", func(t *testing.T) {
		cmd, child, report := start(t)
		b, _ := os.ReadFile(procPath(report))
		var pgid, session int
		var st uint64
		fmt.Sscanf(string(b), "%d %d %d", &pgid, &session, &st)
		os.WriteFile(procPath(report), fmt.Appendf(nil, "%d %d %d\n", pgid, session, st+1), 0o644)
		if n, err := killOrphans(report); n != 0 || err != nil {
			t.Fatalf("killed %d, err %v", n, err)
		}
		if !proc.Alive(cmd.Process.Pid) || !proc.Alive(child) {
			t.Fatal("a process with the recorded number but another start time was killed")
		}
		if _, err := os.Stat(procPath(report)); !os.IsNotExist(err) {
			t.Errorf("proc file left behind: %v", err)
		}
	})
	t.Run("leader alive", func(t *testing.T) {
		cmd, child, report := start(t)
		if n, err := killOrphans(report); n != 2 || err != nil {
			t.Fatalf("killed %d, err %v", n, err)
		}
		_ = cmd.Wait()
		waitDead(t, "the child", child)
	})
	t.Run("leader gone", func(t *testing.T) {
		cmd, child, report := start(t)
		_ = cmd.Process.Kill() // as Pdeathsig does when the server dies
		_ = cmd.Wait()
		if !proc.Alive(child) {
			t.Fatal("the child died with its shell")
		}
		if n, err := killOrphans(report); n != 1 || err != nil {
			t.Fatalf("killed %d, err %v", n, err)
		}
		waitDead(t, "the child", child)
	})
}

const orphanHelperDB, orphanHelperWS = "JOBS_ORPHAN_HELPER_DB", "JOBS_ORPHAN_HELPER_WS"

func openOrphanEngine(t *testing.T, path, yaml string) (*Engine, *catalog.Workspace) {
	t.Helper()
	eng, ws, store, err := newOrphanEngine(path, yaml)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return eng, ws
}

func newOrphanEngine(path, yaml string) (*Engine, *catalog.Workspace, *db.Store, error) {
	ctx := context.Background()
	store, err := db.Open(path)
	if err != nil {
		return nil, nil, nil, err
	}
	eng, ws, err := func() (*Engine, *catalog.Workspace, error) {
		ws, err := catalog.ParseWorkspace("t.yaml", []byte(yaml))
		if err != nil {
			return nil, nil, err
		}
		if err := store.SyncWorkspace(ctx, ws, "test", time.Now()); err != nil {
			return nil, nil, err
		}
		ids, err := store.AssetIDs(ctx)
		if err != nil {
			return nil, nil, err
		}
		eng, err := NewEngine(ctx, store, func() (*catalog.Workspace, map[string]int64) { return ws, ids },
			slog.New(slog.NewTextHandler(io.Discard, nil)), Options{LeaseTTL: 300 * time.Millisecond, Tick: 20 * time.Millisecond})
		return eng, ws, err
	}()
	if err != nil {
		store.Close()
		return nil, nil, nil, err
	}
	return eng, ws, store, nil
}

// TestMain turns the test binary into the server that
// TestCommandOrphansKilledAfterCrash kills with SIGKILL when that test starts
// it with orphanHelperDB set; otherwise it runs the tests.
func TestMain(m *testing.M) {
	if path := os.Getenv(orphanHelperDB); path != "" {
		runOrphanServer(path, os.Getenv(orphanHelperWS))
		return
	}
	os.Exit(pgtest.Main(m))
}

// runOrphanServer starts a one-partition backfill and serves until killed.
func runOrphanServer(path, yaml string) {
	eng, _, _, err := newOrphanEngine(path, yaml)
	if err != nil {
		fmt.Fprintln(os.Stderr, "orphan server:", err)
		os.Exit(1)
	}
	go func() { _ = eng.Run(context.Background(), time.Second) }()
	if _, err := eng.Create(context.Background(), Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-01"},
		ChunkSize: 1, MaxConcurrentRuns: 1}, "", "test"); err != nil {
		fmt.Fprintln(os.Stderr, "orphan server:", err)
		os.Exit(1)
	}
	time.Sleep(time.Minute) // until killed
	os.Exit(1)
}

// After the server is killed with SIGKILL, the children its command left
// running are killed by the recovery of the expired attempt, before a retry
// would build the same partitions beside them.
func TestCommandOrphansKilledAfterCrash(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.db")
	ws := fmt.Sprintf(`
assets:
  a.daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    retries: {max_attempts: 3}
    timeout: 60s
    executor: {command: [sh, -c, 'echo building $TESSERA_PARTITIONS; sleep 600 & echo $! > %s/child; wait']}
`, dir)
	server := exec.Command(os.Args[0])
	server.Env = append(os.Environ(), orphanHelperDB+"="+path, orphanHelperWS+"="+ws)
	out := &bytes.Buffer{}
	server.Stdout, server.Stderr = out, out
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = server.Process.Kill(); _ = server.Wait() }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the server's output:\n%s", out)
		}
	})
	childFile := filepath.Join(dir, "child")
	poll.Eventually(t, 20*time.Second, "the command to start", func() bool {
		b, _ := os.ReadFile(childFile)
		return len(b) > 0 && b[len(b)-1] == '\n'
	})
	child := readPid(t, childFile)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	// The server copies the command's output into the .out file as it reads
	// it; kill it once the first line is there (output still in the pipe
	// when a server dies is lost, and under -race the copy can lag).
	poll.Eventually(t, 20*time.Second, "the command's output to reach its .out file", func() bool {
		outs, _ := filepath.Glob(filepath.Join(path+".reports", "*.out"))
		if len(outs) != 1 {
			return false
		}
		b, _ := os.ReadFile(outs[0])
		return strings.Contains(string(b), "building 2025-01-01")
	})
	_ = server.Process.Signal(syscall.SIGKILL)
	_ = server.Wait()
	// A sleep: that the child does NOT die with the server shows only as time passing.
	time.Sleep(50 * time.Millisecond)
	if !proc.Alive(child) {
		t.Fatal("the command's child died with the server: nothing left to recover")
	}
	// A new server on the same database, once the dead one's lease expired.
	eng, _ := openOrphanEngine(t, path, ws)
	var comps []completion
	poll.Eventually(t, 20*time.Second, "the expired attempt", func() bool {
		var err error
		comps, err = eng.recoverExpired(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return len(comps) > 0
	})
	if len(comps) != 1 || comps[0].res.State != db.AttemptInterrupted || comps[0].act.attempt != 1 {
		t.Fatalf("recovered %+v", comps)
	}
	// The attempt ended when its server was last seen, not when the new one
	// noticed: its duration leaves the downtime out.
	var lastSeen int64 // the dead server's last heartbeat, or the attempt's start when that came after it
	if err := eng.Store.RawReader().Get(&lastSeen, `SELECT MAX(w.heartbeat_at, a.started_at) FROM workers w JOIN attempts a ON a.owner = w.owner WHERE a.run_id = ?`, comps[0].act.run.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.step(context.Background(), comps, false); err != nil {
		t.Fatal(err)
	}
	var ended int64
	if err := eng.Store.RawReader().Get(&ended, `SELECT finished_at FROM attempts WHERE run_id = ? AND attempt = 1`, comps[0].act.run.ID); err != nil {
		t.Fatal(err)
	}
	if ended != lastSeen || time.Since(db.FromMillis(ended)) < 150*time.Millisecond {
		t.Fatalf("interrupted attempt finished at %d, its server was last seen at %d (%v ago)", ended, lastSeen, time.Since(db.FromMillis(lastSeen)))
	}
	// Its log is what the command had written before the crash.
	var log string
	if err := eng.Store.RawReader().Get(&log, `SELECT log FROM attempt_logs WHERE run_id = ? AND attempt = 1`, comps[0].act.run.ID); err != nil {
		t.Fatalf("no log for the interrupted attempt: %v", err)
	}
	if !strings.Contains(log, "building 2025-01-01") || !strings.Contains(log, "the server stopped while this attempt ran") {
		t.Fatalf("interrupted attempt's log: %q", log)
	}
	if left, _ := filepath.Glob(filepath.Join(path+".reports", "*.out")); len(left) > 0 {
		t.Errorf("output files left behind: %v", left)
	}
	waitDead(t, "the crashed attempt's child", child)
	if left, _ := filepath.Glob(filepath.Join(path+".reports", "*.proc")); len(left) > 0 {
		t.Errorf("proc files left behind: %v", left)
	}
}
