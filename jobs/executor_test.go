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
	"github.com/tessera-dev/tessera/testkit/poll"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

func commandAsset(argv []string, shell bool) *catalog.Asset {
	return &catalog.Asset{Key: "a.cmd", Executor: catalog.Executor{Kind: catalog.ExecutorCommand, Command: argv, Shell: shell, Env: map[string]string{"EXTRA": "yes"}}}
}

func TestCommandExecutorEnvironmentAndReport(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	for _, mode := range []string{"timeout", "cancel"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pid")
			// The child of the shell must die too (process group).
			def := commandAsset([]string{fmt.Sprintf("sleep 30 & echo $! > %s; wait", pidFile)}, true)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			if mode == "cancel" {
				ctx, cancel = context.WithCancel(context.Background())
			}
			defer cancel()
			start := time.Now()
			done := make(chan Result, 1)
			go func() {
				done <- CommandExecutor{}.Execute(ctx, Work{Partitions: []string{"k"}, ReportPath: filepath.Join(dir, "r"), Def: def})
			}()
			if mode == "cancel" { // cancel once the command and its child run
				poll.Eventually(t, 20*time.Second, "the command's child to start", func() bool {
					b, _ := os.ReadFile(pidFile)
					return strings.HasSuffix(string(b), "\n")
				})
				cancel()
			}
			res := <-done
			if res.Err == nil || time.Since(start) > 5*time.Second {
				t.Fatalf("err %v after %s", res.Err, time.Since(start))
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			poll.Eventually(t, 20*time.Second, fmt.Sprintf("child %d to die", pid), func() bool {
				stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
				return syscall.Kill(pid, 0) != nil || strings.Contains(string(stat), ") Z ")
			})
		})
	}
}

func TestCommandExecutorThroughTheEngine(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		dir := t.TempDir()
		ws := teststore.Assets(teststore.Asset("a.daily", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "retries: {max_attempts: 1}", "timeout: 2s",
			fmt.Sprintf(`executor: {command: [sh, -c, 'for p in $TESSERA_PARTITIONS; do echo "$p" >> %s/built; done']}`, dir)))
		env := newTestEnvOn(t, dialect, ws, Options{})
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
	})
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
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
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
		env := newTestEnvOn(t, dialect, httpAsset(srv.URL, tokens.URL), Options{BaseURL: "http://tessera.test"})
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
		poll.Eventually(t, 20*time.Second, "two async posts", func() bool { mu.Lock(); defer mu.Unlock(); return len(asyncRuns) == 2 })
		env.steps(3) // a 202 must not end the run: give the controller the steps that would
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
		poll.Eventually(t, 20*time.Second, "run finished", func() bool { r, _ := env.store.Run(ctx, w0.RunID); return r.State == db.RunSucceeded })
		if err := env.eng.Complete(ctx, w0.RunID, nil, ""); err == nil {
			t.Fatal("complete of a finished run accepted")
		}
		// 429 with Retry-After slows the whole pool down.
		mode.Store("429")
		asked := time.Now()
		b = env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-10", End: "2025-01-10"}, ChunkSize: 1, MaxConcurrentRuns: 1})
		env.wait(b.ID, db.BackfillFailed)
		seen := time.Now()
		env.eng.pools.mu.Lock()
		till := env.eng.pools.slowTill["remote"]
		env.eng.pools.mu.Unlock()
		// Retry-After: 2 counts from the answer, which came between the
		// request and the test seeing the failure (however long a loaded
		// machine took between them).
		if till.Before(asked.Add(2*time.Second-10*time.Millisecond)) || till.After(seen.Add(2*time.Second)) {
			t.Fatalf("pool slowed until %s, want 2 s after the 429 (between %s and %s)", till.Format("15:04:05.000"),
				asked.Add(2*time.Second).Format("15:04:05.000"), seen.Add(2*time.Second).Format("15:04:05.000"))
		}
		mode.Store("sync")
		b = env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-11", End: "2025-01-11"}, ChunkSize: 1, MaxConcurrentRuns: 1})
		env.steps(10) // the steps that would start a run, were the pool not slowed down
		env.wait(b.ID, db.BackfillSucceeded)
		// Its attempt started once the slowdown was over, whenever the
		// steps above ran (on a loaded machine, maybe after it).
		var started int64
		if err := env.store.RawReader().Get(&started, `SELECT MIN(a.started_at) FROM attempts a JOIN runs r ON r.id = a.run_id WHERE r.backfill_id = ?`, b.ID); err != nil {
			t.Fatal(err)
		}
		if started < db.Millis(till)-1 {
			t.Fatalf("a run started at %s while the pool was slowed down until %s", db.FromMillis(started).Format("15:04:05.000"), till.Format("15:04:05.000"))
		}
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
	})
}

func TestPoolCapAndThrottle(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		ws := `pools:
  small: {max_concurrent_runs: 2}
  slow: {max_concurrent_runs: 10, throttle: 4/1s}
` + teststore.Assets(
			teststore.Asset("a.capped", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "pool: small"),
			teststore.Asset("a.throttled", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "pool: slow"),
		)
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
		env := newTestEnvOn(t, dialect, ws, Options{Executor: ex})
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
	})
}

// A report line Tessera cannot use never counts as success: a misspelled
// status fails its partition, a line that names no partition of the attempt
// fails the partitions left unreported, and both say what was wrong.
func TestCommandReportProblemsFailPartitions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := func(t *testing.T, lines ...string) Result {
		t.Helper()
		report := filepath.Join(dir, t.Name()+".jsonl")
		os.MkdirAll(filepath.Dir(report), 0o755)
		script := "cat > \"$TESSERA_REPORT\" <<'EOF'\n" + strings.Join(lines, "\n") + "\nEOF\necho built"
		return CommandExecutor{}.Execute(context.Background(), Work{Partitions: []string{"p1", "p2", "p3"}, ReportPath: report,
			Def: commandAsset([]string{script}, true)})
	}
	t.Run("status", func(t *testing.T) {
		res := run(t, `{"partition":"p1","status":"materialized"}`, `{"partition":"p2","status":"FAILED","error":"disk full"}`, `{"partition":"p3","status":"fail"}`)
		want2 := `report line 2: status "FAILED" is not "materialized" or "failed"`
		if p := res.Parts["p2"]; p.Status != db.StatusFailed || !strings.Contains(p.Error, want2) || !strings.Contains(p.Error, "disk full") {
			t.Errorf("p2 %+v", p)
		}
		if p := res.Parts["p3"]; p.Status != db.StatusFailed || !strings.Contains(p.Error, `report line 3: status "fail" is not`) {
			t.Errorf("p3 %+v", p)
		}
		if res.Parts["p1"].Status != db.StatusMaterialized {
			t.Errorf("p1 %+v", res.Parts["p1"])
		}
		if res.Err == nil || !strings.Contains(res.Err.Error(), want2) || !strings.Contains(res.Log, "tessera: "+want2) || !strings.Contains(res.Log, "built") {
			t.Errorf("err %v log %q", res.Err, res.Log)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		res := run(t, `{"partition":"p1","status":"materialized"}`, `{"partition":"p2" "status":"materialized"}`, `{"partition":"p4","status":"materialized"}`)
		if res.Parts["p1"].Status != db.StatusMaterialized {
			t.Errorf("p1 %+v", res.Parts["p1"])
		}
		for _, k := range []string{"p2", "p3"} {
			if p := res.Parts[k]; p.Status != db.StatusFailed || !strings.Contains(p.Error, "report line 2: not a JSON object") {
				t.Errorf("%s %+v", k, p)
			}
		}
		if _, ok := res.Parts["p4"]; ok {
			t.Errorf("a partition outside the attempt was kept: %+v", res.Parts)
		}
		if res.Err == nil || !strings.Contains(res.Err.Error(), "report line 2") || !strings.Contains(res.Log, `tessera: report line 3: partition "p4" is not one of this attempt's partitions`) {
			t.Errorf("err %v log %q", res.Err, res.Log)
		}
	})
	t.Run("stray line beside a complete report", func(t *testing.T) {
		res := run(t, `{"partition":"p1","status":"materialized"}`, `{"partition":"p2","status":"materialized"}`, `{"partition":"p3","status":"failed","error":"x"}`, ``, `{"partition":"p9","status":"materialized"}`)
		if res.Err != nil || res.Parts["p2"].Status != db.StatusMaterialized || res.Parts["p3"].Error != "x" || !strings.Contains(res.Log, `tessera: report line 5: partition "p9"`) {
			t.Errorf("err %v parts %+v log %q", res.Err, res.Parts, res.Log)
		}
	})
}

// Through the engine: a misspelled status on exit 0 fails the partition and the backfill.
func TestCommandReportMisspelledStatusFailsTheBackfill(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		ws := teststore.Assets(
			teststore.Asset("a.daily", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "retries: {max_attempts: 1}", "timeout: 10s", `executor: {command: [sh, -c, 'for p in $TESSERA_PARTITIONS; do echo "{\"partition\":\"$p\",\"status\":\"FAILED\"}" >> "$TESSERA_REPORT"; done']}`),
		)
		env := newTestEnvOn(t, dialect, ws, Options{ReportDir: t.TempDir()})
		env.start()
		b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-02"}, ChunkSize: 2, MaxConcurrentRuns: 1})
		f := env.wait(b.ID, db.BackfillSucceeded, db.BackfillFailed)
		if f.State != db.BackfillFailed || f.PartitionsMaterialized != 0 || f.PartitionsFailed != 2 {
			t.Fatalf("final %+v", f)
		}
		atts, err := onlyRunAttempts(t, env, b.ID)
		if err != nil || len(atts) != 1 || atts[0].State != db.AttemptFailed || atts[0].Error == nil ||
			!strings.Contains(*atts[0].Error, `report line 1: status "FAILED" is not "materialized" or "failed"`) {
			t.Fatalf("attempts %+v %v", atts, err)
		}
	})
}

// The server's own TESSERA_* settings do not reach commands; the rest of
// the environment and the asset's env do.
func TestCommandExecutorDropsServerSettings(t *testing.T) {
	t.Setenv("TESSERA_SESSION_KEYS", "sessionsecret")
	t.Setenv("TESSERA_TOKEN", "tokensecret")
	t.Setenv("TESSERA_DB", "/srv/tessera.db")
	t.Setenv("CLOUD_CREDENTIALS", "kept")
	dir := t.TempDir()
	def := commandAsset([]string{"env"}, false)
	def.Executor.Env["TESSERA_EXPLICIT"] = "from the workspace"
	res := CommandExecutor{}.Execute(context.Background(), Work{Asset: "a.cmd", Partitions: []string{"k"}, ReportPath: filepath.Join(dir, "r.jsonl"), Def: def})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	for _, leak := range []string{"sessionsecret", "tokensecret", "TESSERA_DB="} {
		if strings.Contains(res.Log, leak) {
			t.Errorf("the command saw %s:\n%s", leak, res.Log)
		}
	}
	for _, want := range []string{"CLOUD_CREDENTIALS=kept\n", "EXTRA=yes\n", "TESSERA_EXPLICIT=from the workspace\n", "TESSERA_ASSET=a.cmd\n", "PATH="} {
		if !strings.Contains(res.Log, want) {
			t.Errorf("the command lacks %q:\n%s", want, res.Log)
		}
	}
}

// A 2xx answer whose results hold a status Tessera does not know fails
// those partitions (and a foreign partition fails the unreported ones).
func TestHTTPExecutorRejectsUnknownResultStatus(t *testing.T) {
	t.Parallel()
	var answer atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, answer.Load().(string))
	}))
	defer srv.Close()
	def := &catalog.Asset{Key: "a.http", Executor: catalog.Executor{Kind: catalog.ExecutorHTTP, HTTP: &catalog.HTTPExecutor{URL: srv.URL, Timeout: 5 * time.Second}}}
	work := Work{RunID: "run_h", Partitions: []string{"p1", "p2"}, Def: def}
	answer.Store(`{"results":[{"partition":"p1","status":"materialized"},{"partition":"p2","status":"fail"}]}`)
	res := (&HTTPExecutor{}).Execute(context.Background(), work)
	want := `results[1]: status "fail" is not "materialized" or "failed"`
	if p := res.Parts["p2"]; p.Status != db.StatusFailed || !strings.Contains(p.Error, want) || res.Parts["p1"].Status != db.StatusMaterialized {
		t.Errorf("parts %+v", res.Parts)
	}
	if res.Err == nil || !strings.Contains(res.Err.Error(), want) || !strings.Contains(res.Log, "tessera: "+want) {
		t.Errorf("err %v log %q", res.Err, res.Log)
	}
	answer.Store(`{"results":[{"partition":"p1","status":"materialized"},{"partition":"p-2","status":"materialized"}]}`)
	res = (&HTTPExecutor{}).Execute(context.Background(), work)
	if p := res.Parts["p2"]; p.Status != db.StatusFailed || !strings.Contains(p.Error, `results[1]: partition "p-2" is not one of this attempt's partitions`) || res.Err == nil {
		t.Errorf("foreign partition: err %v parts %+v", res.Err, res.Parts)
	}
}

// A request that hits the http executor's timeout is a timeout, not a failure.
func TestHTTPExecutorTimeoutIsRecordedAsTimeout(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		defer srv.Close()
		defer close(release)
		ws := teststore.Assets(oneAttemptAsset("a.daily", "{daily: {start: 2025-01-01, end: 2025-02-01}}", fmt.Sprintf("{http: {url: %q, timeout: 300ms}}", srv.URL)))
		env := newTestEnvOn(t, dialect, ws, Options{})
		env.start()
		b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-01"}, ChunkSize: 1, MaxConcurrentRuns: 1})
		if f := env.wait(b.ID, db.BackfillSucceeded, db.BackfillFailed); f.State != db.BackfillFailed {
			t.Fatalf("final %+v", f)
		}
		atts, err := onlyRunAttempts(t, env, b.ID)
		if err != nil || len(atts) != 1 || atts[0].State != db.AttemptTimeout || atts[0].Error == nil ||
			!strings.Contains(*atts[0].Error, "no answer within 300ms") {
			t.Fatalf("attempts %+v %v", atts, err)
		}
	})
}

// An attempt that outlives the asset's timeout is recorded as timeout, and
// its error says which setting stopped it.
func TestAttemptTimeoutNamesTheSetting(t *testing.T) {
	t.Parallel()
	teststore.EachDialect(t, func(t *testing.T, dialect db.Dialect) {
		ex := funcExec(func(ctx context.Context, w Work) Result {
			<-ctx.Done()
			return Result{Err: ctx.Err()}
		})
		env := newTestEnvOn(t, dialect, teststore.Assets(
			teststore.Asset("a.daily", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "retries: {max_attempts: 1}", "timeout: 200ms"),
		), Options{Executor: ex})
		env.start()
		b := env.create(Request{Assets: []string{"a.daily"}, Selector: Selector{Type: "range", Start: "2025-01-01", End: "2025-01-01"}, ChunkSize: 1, MaxConcurrentRuns: 1})
		env.wait(b.ID, db.BackfillFailed)
		atts, err := env.store.Attempts(context.Background(), runIDOf(t, env, b.ID, 0))
		if err != nil || len(atts) != 1 || atts[0].State != db.AttemptTimeout || atts[0].Error == nil ||
			!strings.Contains(*atts[0].Error, "timed out after 200ms") || !strings.Contains(*atts[0].Error, "raise timeout: in the workspace file") {
			t.Fatalf("attempts %+v %v", atts, err)
		}
	})
}

// A command's output file (kept for crash recovery) stays bounded however
// much the command writes, and always holds the tail.
func TestOutputFileStaysBoundedWithTheTail(t *testing.T) {
	t.Parallel()
	f, err := os.Create(filepath.Join(t.TempDir(), "a.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := &tailBuffer{max: 100, file: f}
	for i := range 1000 {
		fmt.Fprintf(out, "line %04d\n", i)
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 400 || !strings.HasSuffix(string(b), "line 0999\n") {
		t.Fatalf("output file of %d bytes, ending %q", len(b), b[max(0, len(b)-20):])
	}
	if got := crashLog(strings.TrimSuffix(f.Name(), ".out") + ".jsonl"); got != string(b) {
		t.Fatalf("crash log %q", got)
	}
	if _, err := os.Stat(f.Name()); !os.IsNotExist(err) {
		t.Fatal("the crash log's file is still there")
	}
}

// A pool's wait reason names what holds it: its throttle only when it has
// no run left, a remote slow-down with its end, nothing otherwise.
func TestPoolHoldingReason(t *testing.T) {
	t.Parallel()
	ws := &catalog.Workspace{Pools: map[string]catalog.Pool{"p": {Throttle: &catalog.Throttle{Runs: 1, Per: time.Hour}}}}
	p := newPoolState()
	now := time.Now()
	u := poolUse{running: map[string]int{}, starts: map[string][]int64{}}
	if !p.admit(ws, "p", u, now) || p.holding(ws, "p", now) != "" {
		t.Fatalf("a fresh throttle holds: %q", p.holding(ws, "p", now))
	}
	u.take("p", now)
	p.keep(u)
	if p.admit(ws, "p", u, now) {
		t.Fatal("a spent throttle admits another run")
	}
	if got := p.holding(ws, "p", now); !strings.Contains(got, "its throttle (1 run per 1 h 0 min) has no run left") || !strings.Contains(got, "the next in about 1 h 0 min") {
		t.Fatalf("spent throttle: %q", got)
	}
	// Under a second to go: not "in about 0 ms" (a newcomer's audit).
	if got := p.holding(ws, "p", now.Add(time.Hour-400*time.Millisecond)); !strings.HasSuffix(got, "has no run left; the next within a second") {
		t.Fatalf("a spent throttle 400 ms before its next run: %q", got)
	}
	q := newPoolState()
	q.SlowDown("p", now.Add(time.Minute))
	if got := q.holding(ws, "p", now); !strings.Contains(got, "asked to slow down until") {
		t.Fatalf("slow-down: %q", got)
	}
	if got := q.holding(ws, "p", now.Add(2*time.Minute)); got != "" {
		t.Fatalf("after the slow-down: %q", got)
	}
}

// onlyRunAttempts reads the attempts of backfill id's run; t fails unless
// the backfill has exactly one run.
func onlyRunAttempts(t *testing.T, env *testEnv, id string) ([]db.Attempt, error) {
	t.Helper()
	runs, err := env.store.Runs(context.Background(), id, nil, -1, 10)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v %v", runs, err)
	}
	return env.store.Attempts(context.Background(), runs[0].ID)
}
