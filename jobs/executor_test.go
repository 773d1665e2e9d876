package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

func commandAsset(argv []string, shell bool) *catalog.Asset {
	return &catalog.Asset{Key: "a.cmd", Executor: catalog.Executor{Kind: catalog.ExecutorCommand, Command: argv, Shell: shell, Env: map[string]string{"EXTRA": "yes"}}}
}

func TestCommandExecutorEnvironmentAndReport(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "job.sh")
	os.WriteFile(script, []byte(`#!/bin/sh
env | grep -E '^(TESSERA_|EXTRA=)' | sort > "$1/env"
printf '%s' "$TESSERA_PARTITIONS" > "$1/parts"
echo "building $TESSERA_ASSET"
echo "oops" >&2
echo '{"partition":"2025-01-02","status":"failed","error":"bad rows"}' >> "$TESSERA_REPORT"
echo '{"partition":"2025-01-01","status":"materialized","metadata":{"rows":12}}' >> "$TESSERA_REPORT"
`), 0o755)
	w := Work{RunID: "run_x", RunKey: "backfill:b:chunk:0", Attempt: 2, Asset: "a.cmd", Partitions: []string{"2025-01-01", "2025-01-02", "it's; $(rm -rf /)"},
		RangeStart: "2025-01-01", RangeEnd: "2025-01-02", IdempotencyKey: "run_x:2", ReportPath: filepath.Join(dir, "r", "report.jsonl"),
		Def: commandAsset([]string{script, dir}, false)}
	res := CommandExecutor{}.Execute(context.Background(), w)
	if res.Err != nil {
		t.Fatalf("err %v log %s", res.Err, res.Log)
	}
	env, _ := os.ReadFile(filepath.Join(dir, "env"))
	for _, want := range []string{"TESSERA_ASSET=a.cmd", "TESSERA_RUN_ID=run_x", "TESSERA_RUN_KEY=backfill:b:chunk:0", "TESSERA_ATTEMPT=2",
		"TESSERA_IDEMPOTENCY_KEY=run_x:2", "TESSERA_RANGE_START=2025-01-01", "TESSERA_RANGE_END=2025-01-02", "TESSERA_REPORT=" + w.ReportPath, "EXTRA=yes"} {
		if !strings.Contains(string(env), want+"\n") {
			t.Errorf("environment lacks %s:\n%s", want, env)
		}
	}
	parts, _ := os.ReadFile(filepath.Join(dir, "parts"))
	if string(parts) != "2025-01-01\n2025-01-02\nit's; $(rm -rf /)" {
		t.Errorf("TESSERA_PARTITIONS = %q", parts)
	}
	if res.Parts["2025-01-01"].Status != db.StatusMaterialized || string(res.Parts["2025-01-01"].Metadata) != `{"rows":12}` || res.Parts["2025-01-02"].Status != db.StatusFailed {
		t.Errorf("report %+v", res.Parts)
	}
	if !strings.Contains(res.Log, "building a.cmd") || !strings.Contains(res.Log, "oops") {
		t.Errorf("log %q", res.Log)
	}
	// Non-zero exit without a report fails; output is kept, bounded.
	res = CommandExecutor{}.Execute(context.Background(), Work{Partitions: []string{"k"}, ReportPath: filepath.Join(dir, "r2"),
		Def: commandAsset([]string{"head -c 100000 /dev/zero | tr '\\0' x; exit 3"}, true)})
	if res.Err == nil || !strings.Contains(res.Err.Error(), "exit status 3") || len(res.Log) > LogLimit+100 || !strings.Contains(res.Log, "earlier bytes dropped") {
		t.Errorf("failing command: err %v, log %d bytes", res.Err, len(res.Log))
	}
}

func TestCommandExecutorTimeoutAndCancelKillTheGroup(t *testing.T) {
	for _, mode := range []string{"timeout", "cancel"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pid")
			// The child of the shell must die too (process group).
			def := commandAsset([]string{fmt.Sprintf("sleep 30 & echo $! > %s; wait", pidFile)}, true)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			if mode == "cancel" {
				ctx, cancel = context.WithCancel(context.Background())
				go func() { time.Sleep(300 * time.Millisecond); cancel() }()
			}
			defer cancel()
			start := time.Now()
			res := CommandExecutor{}.Execute(ctx, Work{Partitions: []string{"k"}, ReportPath: filepath.Join(dir, "r"), Def: def})
			if res.Err == nil || time.Since(start) > 5*time.Second {
				t.Fatalf("err %v after %s", res.Err, time.Since(start))
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			time.Sleep(50 * time.Millisecond)
			stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err := syscall.Kill(pid, 0); err == nil && !strings.Contains(string(stat), ") Z ") {
				t.Fatalf("child %d still alive: %s", pid, stat)
			}
		})
	}
}

func TestCommandExecutorThroughTheEngine(t *testing.T) {
	dir := t.TempDir()
	ws := fmt.Sprintf(`
assets:
  a.daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    retries: {max_attempts: 1}
    timeout: 2s
    executor: {command: [sh, -c, 'for p in $TESSERA_PARTITIONS; do echo "$p" >> %s/built; done']}
`, dir)
	env := newTestEnv(t, ws, Options{})
	env.start()
	b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-20"}, ChunkSize: 4, MaxConcurrentRuns: 3})
	f := env.wait(b.ID, db.BackfillSucceeded, db.BackfillFailed)
	if f.State != db.BackfillSucceeded || f.PartitionsMaterialized != 20 {
		t.Fatalf("final %+v", f)
	}
	built, _ := os.ReadFile(filepath.Join(dir, "built"))
	if n := strings.Count(string(built), "\n"); n != 20 {
		t.Fatalf("built %d partitions:\n%s", n, built)
	}
}

func httpAsset(url, tokenURL string) string {
	return fmt.Sprintf(`
pools:
  remote: {max_concurrent_runs: 4}
assets:
  a.daily:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    pool: remote
    retries: {max_attempts: 1}
    executor: {http: {url: %q, token_url: %q, timeout: 5s}}
`, url, tokenURL)
}

func TestHTTPExecutorSyncAsyncRateLimitAndTokenRefresh(t *testing.T) {
	var mode atomic.Value
	mode.Store("sync")
	var tokenCalls, minTok atomic.Int64
	var mu sync.Mutex
	var asyncRuns []Work
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := tokenCalls.Add(1)
		fmt.Fprintf(w, `{"access_token":"tok%d"}`, n)
	}))
	defer tokens.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var work Work
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &work); err != nil || r.Header.Get("Idempotency-Key") == "" {
			w.WriteHeader(400)
			return
		}
		switch mode.Load().(string) {
		case "sync":
			var res []PartResult
			for _, p := range work.Partitions {
				res = append(res, PartResult{Partition: p, Status: db.StatusMaterialized, Metadata: json.RawMessage(`{"rows":1}`)})
			}
			json.NewEncoder(w).Encode(map[string]any{"results": res})
		case "async":
			mu.Lock()
			asyncRuns = append(asyncRuns, work)
			mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
		case "429":
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
		case "401":
			n, _ := strconv.Atoi(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer tok"))
			if int64(n) <= minTok.Load() {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.WriteHeader(http.StatusOK)
		}
	}))
	defer srv.Close()
	env := newTestEnv(t, httpAsset(srv.URL, tokens.URL), Options{BaseURL: "http://tessera.test"})
	env.start()
	ctx := context.Background()
	// Sync: 2xx with results.
	b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-04"}, ChunkSize: 2, MaxConcurrentRuns: 2})
	if f := env.wait(b.ID, db.BackfillSucceeded, db.BackfillFailed); f.State != db.BackfillSucceeded || f.PartitionsMaterialized != 4 {
		t.Fatalf("sync %+v", f)
	}
	// Async: 202, then the remote engine calls back.
	mode.Store("async")
	b = env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-05", End: "2025-01-06"}, ChunkSize: 1, MaxConcurrentRuns: 2})
	waitFor(t, "two async posts", func() bool { mu.Lock(); defer mu.Unlock(); return len(asyncRuns) == 2 })
	time.Sleep(20 * time.Millisecond)
	if got := env.wait(b.ID, db.BackfillRunning); got.RunsRunning != 2 {
		t.Fatalf("async runs should still run: %+v", got)
	}
	mu.Lock()
	w0, w1 := asyncRuns[0], asyncRuns[1]
	mu.Unlock()
	if w0.CallbackURL != "http://tessera.test/api/v1/runs/"+w0.RunID+"/complete" || w0.RunID == "" {
		t.Fatalf("work %+v", w0)
	}
	if err := env.eng.Complete(ctx, w0.RunID, []PartResult{{Partition: "nope", Status: db.StatusMaterialized}}, ""); err == nil {
		t.Fatal("complete with a foreign partition accepted")
	}
	if err := env.eng.Complete(ctx, w0.RunID, []PartResult{{Partition: w0.Partitions[0], Status: db.StatusMaterialized}}, ""); err != nil {
		t.Fatal(err)
	}
	if err := env.eng.Complete(ctx, w1.RunID, nil, "remote engine failed"); err != nil {
		t.Fatal(err)
	}
	f := env.wait(b.ID, db.BackfillSucceeded, db.BackfillFailed)
	if f.State != db.BackfillFailed || f.PartitionsMaterialized != 1 || f.PartitionsFailed != 1 {
		t.Fatalf("async %+v", f)
	}
	waitFor(t, "run finished", func() bool { r, _ := env.store.Run(ctx, w0.RunID); return r.State == db.RunSucceeded })
	if err := env.eng.Complete(ctx, w0.RunID, nil, ""); err == nil {
		t.Fatal("complete of a finished run accepted")
	}
	// 429 with Retry-After slows the whole pool down.
	mode.Store("429")
	b = env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-10", End: "2025-01-10"}, ChunkSize: 1, MaxConcurrentRuns: 1})
	env.wait(b.ID, db.BackfillFailed)
	env.eng.pools.mu.Lock()
	till := env.eng.pools.slowTill["remote"]
	env.eng.pools.mu.Unlock()
	if d := time.Until(till); d < time.Second || d > 2*time.Second {
		t.Fatalf("pool slowed until %s from now, want ~2s", d)
	}
	mode.Store("sync")
	b = env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-11", End: "2025-01-11"}, ChunkSize: 1, MaxConcurrentRuns: 1})
	time.Sleep(300 * time.Millisecond)
	if got, _ := env.store.Backfill(ctx, b.ID); got.RunsRunning+got.RunsSucceeded != 0 {
		t.Fatalf("a run started while the pool was slowed down: %+v", got)
	}
	env.wait(b.ID, db.BackfillSucceeded)
	// 401: one token refresh, then success.
	before := tokenCalls.Load()
	minTok.Store(before) // tokens issued so far are expired now
	mode.Store("401")
	b = env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-12", End: "2025-01-12"}, ChunkSize: 1, MaxConcurrentRuns: 1})
	if f := env.wait(b.ID, db.BackfillSucceeded, db.BackfillFailed); f.State != db.BackfillSucceeded {
		t.Fatalf("401 refresh %+v", f)
	}
	if tokenCalls.Load()-before != 1 {
		t.Fatalf("token fetched %d times, want one refresh", tokenCalls.Load()-before)
	}
}

func TestPoolCapAndThrottle(t *testing.T) {
	const ws = `
pools:
  small: {max_concurrent_runs: 2}
  slow: {max_concurrent_runs: 10, throttle: 4/1s}
assets:
  a.capped:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    pool: small
    executor: {demo: {duration: 1ms}}
  a.throttled:
    partitions: {daily: {start: 2025-01-01, end: 2025-02-01}}
    pool: slow
    executor: {demo: {duration: 1ms}}
`
	var mu sync.Mutex
	running, peak := 0, 0
	var starts []time.Time
	ex := funcExec(func(ctx context.Context, w Work) Result {
		mu.Lock()
		if w.Asset == "a.capped" {
			running++
			peak = max(peak, running)
		} else {
			starts = append(starts, time.Now())
		}
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		if w.Asset == "a.capped" {
			running--
		}
		mu.Unlock()
		return Result{}
	})
	env := newTestEnv(t, ws, Options{Executor: ex})
	env.start()
	a := env.create(Request{Assets: []string{"a.capped"}, Selector: Selector{Type: "range"}, ChunkSize: 1, MaxConcurrentRuns: 8})
	b := env.create(Request{Assets: []string{"a.throttled"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-08"}, ChunkSize: 1, MaxConcurrentRuns: 8})
	env.wait(a.ID, db.BackfillSucceeded)
	start := time.Now()
	env.wait(b.ID, db.BackfillSucceeded)
	mu.Lock()
	defer mu.Unlock()
	if peak > 2 {
		t.Fatalf("pool cap 2, but %d runs ran at once", peak)
	}
	// 8 runs with a bucket of 4 refilled at 4/s: the last starts about a second after the first.
	if len(starts) != 8 || starts[7].Sub(starts[0]) < 700*time.Millisecond {
		t.Fatalf("throttle not respected: %d starts over %s (waited %s)", len(starts), starts[len(starts)-1].Sub(starts[0]), time.Since(start))
	}
}
