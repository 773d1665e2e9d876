package jobs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// Work describes one attempt to an executor.
type Work struct {
	RunID          string   `json:"run_id"`
	RunKey         string   `json:"run_key"`
	BackfillID     string   `json:"backfill_id"`
	Attempt        int64    `json:"attempt"`
	Asset          string   `json:"asset"`
	Partitions     []string `json:"partitions"`
	RangeStart     string   `json:"range_start"`
	RangeEnd       string   `json:"range_end"`
	IdempotencyKey string   `json:"idempotency_key"`
	CodeVersion    string   `json:"code_version"`
	CallbackURL    string   `json:"callback_url,omitempty"`
	// ReportPath is where a command may write one JSON line per partition.
	ReportPath string         `json:"-"`
	Def        *catalog.Asset `json:"-"`
	// recovery, when set, is told whether the files crash recovery reads
	// (see CommandExecutor) could be written: err nil when they were.
	recovery func(w Work, what string, err error)
	// tails, when set, keeps the output in the store for the other
	// instances (livelog.go).
	tails *liveTails
	// began, when set, is told when the work really began (a command's
	// process started): a pool's throttle counts the attempt from then
	// (pools.go).
	began func()
}

// noteBegan says the work has begun (see Work.began).
func (w Work) noteBegan() {
	if w.began != nil {
		w.began()
	}
}

// noteRecovery passes on whether the crash-recovery files were written.
func (w Work) noteRecovery(what string, err error) {
	if w.recovery != nil {
		w.recovery(w, what, err)
	}
}

// PartResult is the outcome of one partition.
type PartResult struct {
	Partition string          `json:"partition"`
	Status    string          `json:"status"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Error     string          `json:"error,omitempty"`
}

// Result is an attempt's outcome. Partitions without an entry in Parts are
// materialized when Err is nil and failed otherwise.
type Result struct {
	State string // "" (derived from Err), timeout, canceled, interrupted
	Err   error
	Parts map[string]PartResult
	Log   string
	Async bool // the remote engine calls back later
	// AsyncTimeout, when set, bounds the wait for the callback (the http
	// executor's timeout); the attempt's own timeout bounds it anyway.
	AsyncTimeout time.Duration
	RetryAfter   time.Duration // the remote asked to wait at least this long
	// EndedAt, when set, is when the attempt ended if that was before it is
	// recorded: an interrupted attempt ended when its server was last seen.
	EndedAt time.Time
}

// Executor materializes partitions.
type Executor interface {
	Execute(ctx context.Context, w Work) Result
}

// NoopExecutor succeeds at once (benchmarks and tests).
type NoopExecutor struct{}

// Execute implements Executor.
func (NoopExecutor) Execute(ctx context.Context, w Work) Result { return Result{} }

func (e *Engine) executorFor(a *catalog.Asset) (Executor, error) {
	if e.opts.Executor != nil {
		return e.opts.Executor, nil
	}
	if a == nil {
		return nil, errors.New("the asset is no longer declared in the workspace")
	}
	switch a.Executor.Kind {
	case catalog.ExecutorDemo:
		return DemoExecutor{failures: &e.demoFails}, nil
	case catalog.ExecutorCommand:
		return CommandExecutor{}, nil
	case catalog.ExecutorHTTP:
		return &HTTPExecutor{Pools: e.pools}, nil
	}
	return nil, fmt.Errorf("unknown executor %q", a.Executor.Kind)
}

func (e *Engine) reportPath(runID string, attempt int64) string {
	return filepath.Join(e.opts.ReportDir, fmt.Sprintf("%s-%d.jsonl", runID, attempt))
}

// execute runs one attempt and always reports its completion, also on panic.
func (e *Engine) execute(a *active) {
	res := Result{State: db.AttemptFailed, Err: errors.New("executor did not return")}
	defer func() {
		if r := recover(); r != nil {
			res = Result{Err: fmt.Errorf("executor panicked: %v\n%s", r, truncate(string(debug.Stack()), 4000))}
		}
		if res.Async {
			return // completed by POST /api/v1/runs/{id}/complete
		}
		e.done <- completion{act: a, res: res}
	}()
	if len(a.parts) == 0 {
		res = Result{}
		return
	}
	ex, err := e.executorFor(a.asset)
	if err != nil {
		res = Result{Err: err}
		return
	}
	timeout := time.Hour
	if a.asset != nil && a.asset.Timeout > 0 {
		timeout = a.asset.Timeout
	}
	ctx, cancel := context.WithTimeout(a.ctx, timeout)
	defer cancel()
	w := Work{RunID: a.run.ID, RunKey: a.run.RunKey, BackfillID: a.run.BackfillID, Attempt: a.attempt, Asset: a.run.Asset,
		RangeStart: a.rangeStart, RangeEnd: a.rangeEnd, IdempotencyKey: fmt.Sprintf("%s:%d", a.run.ID, a.attempt),
		ReportPath: e.reportPath(a.run.ID, a.attempt), Def: a.asset, recovery: e.noteRecovery, tails: e.tails}
	if a.pool != "" {
		w.began = func() { e.pools.launch([]*active{a}, time.Now()) }
	}
	if a.asset != nil {
		w.CodeVersion = a.asset.CodeVersion
	}
	if e.opts.BaseURL != "" {
		w.CallbackURL = strings.TrimSuffix(e.opts.BaseURL, "/") + "/api/v1/runs/" + a.run.ID + "/complete"
	}
	w.Partitions = make([]string, len(a.parts))
	for i, p := range a.parts {
		w.Partitions[i] = p.Key
	}
	debug := e.Log != nil && e.Log.Enabled(ctx, slog.LevelDebug) // TESSERA_LOG_LEVEL=debug
	started := time.Now()
	if debug {
		e.Log.Debug("attempt started", "run", w.RunID, "attempt", w.Attempt, "asset", w.Asset,
			"partitions", len(w.Partitions), "first", w.Partitions[0], "last", w.Partitions[len(w.Partitions)-1], "timeout", timeout)
	}
	w.noteBegan()
	res = ex.Execute(ctx, w)
	if debug {
		e.Log.Debug("executor returned", "run", w.RunID, "attempt", w.Attempt, "asset", w.Asset,
			"async", res.Async, "err", res.Err, "ms", time.Since(started).Milliseconds())
	}
	if res.Async && ctx.Err() == nil {
		// The remote engine calls back (Complete). Until it does, this
		// attempt still has its timeout, and terminate or shutdown still end
		// it: whichever comes first records the completion.
		e.mu.Lock()
		a.async = true
		e.mu.Unlock()
		var expire <-chan time.Time
		if res.AsyncTimeout > 0 {
			t := time.NewTimer(res.AsyncTimeout)
			defer t.Stop()
			expire = t.C
		}
		timedOut := false
		select {
		case <-a.callback:
			return // Complete claimed the attempt and records it
		case <-ctx.Done():
		case <-expire:
			timedOut = true
		}
		e.mu.Lock()
		claimed := !a.async
		a.async = false
		e.mu.Unlock()
		if claimed {
			return
		}
		limit := res.AsyncTimeout
		res = Result{Err: errors.New("no callback from the remote engine"), Log: res.Log}
		if timedOut {
			res.State, res.Err = db.AttemptTimeout, fmt.Errorf("no callback from the remote engine within %s", limit)
		}
	}
	res.Async = false
	switch cause := context.Cause(a.ctx); {
	case errors.Is(cause, errTerminated):
		res.State, res.Err = db.AttemptCanceled, errTerminated
	case errors.Is(cause, errShutdown):
		res.State, res.Err = db.AttemptInterrupted, errShutdown
	case errors.Is(cause, errLost), errors.Is(cause, errFenced):
		res.State, res.Err = db.AttemptInterrupted, cause
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.State, res.Err = db.AttemptTimeout, fmt.Errorf("timed out after %s, the asset's timeout (raise timeout: in the workspace file if the work needs longer)", timeout)
	}
}

// Complete records the outcome of an asynchronous attempt (the http
// executor's 202 callback).
func (e *Engine) Complete(ctx context.Context, runID string, parts []PartResult, errMsg string) error {
	run, err := e.Store.Run(ctx, runID)
	if err != nil {
		return notFound(err)
	}
	if run.State != db.RunRunning {
		return &InputError{Conflict: true, Field: "run", Msg: fmt.Sprintf("run %s is %s, not running: nothing to complete", runID, run.State)}
	}
	e.mu.Lock()
	a := e.running[runID]
	e.mu.Unlock()
	if a == nil {
		return &InputError{Conflict: true, Field: "run", Msg: fmt.Sprintf("run %s is not waiting for a callback on this server", runID)}
	}
	res := Result{Parts: map[string]PartResult{}}
	known := map[string]bool{}
	for _, p := range a.parts {
		known[p.Key] = true
	}
	for i, p := range parts {
		if !known[p.Partition] {
			return bad(fmt.Sprintf("results[%d].partition", i), "partition %q is not part of run %s", p.Partition, runID)
		}
		if msg := statusProblem(p.Status); msg != "" {
			return bad(fmt.Sprintf("results[%d].status", i), "%s", msg)
		}
		res.Parts[p.Partition] = p
	}
	if errMsg != "" {
		res.Err = errors.New(errMsg)
	}
	// A fast remote engine may call back before the 202 answer is processed:
	// wait a moment for the attempt to be marked asynchronous.
	for i := 0; ; i++ {
		e.mu.Lock()
		if e.running[runID] != a {
			e.mu.Unlock()
			return &InputError{Conflict: true, Field: "run", Msg: fmt.Sprintf("run %s is not waiting for a callback", runID)}
		}
		if a.async {
			a.async = false
			close(a.callback)
			e.mu.Unlock()
			break
		}
		e.mu.Unlock()
		if i == 300 {
			return &InputError{Conflict: true, Field: "run", Msg: fmt.Sprintf("run %s is not waiting for a callback (its executor did not answer 202)", runID)}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	e.done <- completion{act: a, res: res}
	return nil
}

// statusProblem says what is wrong with a reported status ("" when nothing):
// the same words for report lines, http answers and the callback.
func statusProblem(status string) string {
	if status == db.StatusMaterialized || status == db.StatusFailed {
		return ""
	}
	return fmt.Sprintf("status %q is not \"materialized\" or \"failed\"", status)
}

// checkedResults is what a command's report file or a remote engine's answer
// said about an attempt's partitions, checked entry by entry. Nothing a
// pipeline misspelled may count as success: an entry with another status
// than materialized or failed marks its partition failed, and an entry that
// names no partition of the attempt (not JSON, no partition, another
// partition) fails the partitions left unreported when the attempt would
// otherwise succeed (see apply).
type checkedResults struct {
	parts    map[string]PartResult
	problems []string // every entry that could not be used as it is
	stray    []string // the problems that name no partition of the attempt
	bad      int      // partitions failed for their status
}

func newCheckedResults() *checkedResults {
	return &checkedResults{parts: map[string]PartResult{}}
}

// add checks one entry; where names it in messages ("report line 2",
// "results[1]"); known, when not nil, is the attempt's partitions.
func (c *checkedResults) add(where string, p PartResult, known map[string]bool) {
	switch {
	case p.Partition == "":
		c.addStray(where + `: no "partition"`)
	case known != nil && !known[p.Partition]:
		c.addStray(fmt.Sprintf("%s: partition %q is not one of this attempt's partitions", where, p.Partition))
	case statusProblem(p.Status) != "":
		msg := where + ": " + statusProblem(p.Status)
		c.problems = append(c.problems, msg)
		if p.Error != "" {
			msg += "; its error: " + p.Error
		}
		c.parts[p.Partition] = PartResult{Partition: p.Partition, Status: db.StatusFailed, Error: msg}
		c.bad++
	default:
		c.parts[p.Partition] = p
	}
}

func (c *checkedResults) addStray(msg string) {
	c.problems = append(c.problems, msg)
	c.stray = append(c.stray, msg)
}

// apply puts the checked results into res: every problem goes to the
// attempt's log; when the attempt would succeed (res.Err is nil) a stray
// problem fails the partitions nobody reported, and a problem that failed a
// partition becomes the attempt's error.
func (c *checkedResults) apply(res *Result, partitions []string) {
	res.Parts = c.parts
	if len(c.problems) == 0 {
		return
	}
	var b strings.Builder
	b.WriteString(res.Log)
	if res.Log != "" && !strings.HasSuffix(res.Log, "\n") {
		b.WriteString("\n")
	}
	for _, p := range c.problems {
		b.WriteString("tessera: " + p + "\n")
	}
	res.Log = b.String()
	if res.Err != nil {
		return
	}
	failed := c.bad
	if len(c.stray) > 0 {
		msg := "not reported, and " + c.stray[0]
		for _, k := range partitions {
			if _, ok := c.parts[k]; !ok {
				c.parts[k] = PartResult{Partition: k, Status: db.StatusFailed, Error: msg}
				failed++
			}
		}
	}
	if failed == 0 {
		return // only a stray entry beside a complete report: logged
	}
	msg := c.problems[0]
	if n := len(c.problems) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more in the log)", n)
	}
	res.Err = errors.New(msg)
}

// readReport reads a report file of JSON lines, one per partition, for
// recovery: lines that name no partition are left out (the partitions they
// may have meant stay unreported); see readReportChecked.
func readReport(path string) map[string]PartResult {
	return readReportChecked(path, nil).parts
}

// readReportChecked reads and checks a report file; known, when not nil,
// is the attempt's partitions. A missing file is an empty report.
func readReportChecked(path string, known map[string]bool) *checkedResults {
	c := newCheckedResults()
	f, err := os.Open(path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			c.addStray(fmt.Sprintf("report: %v", err))
		}
		return c
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		where := fmt.Sprintf("report line %d", n)
		var p PartResult
		if err := json.Unmarshal(line, &p); err != nil {
			c.addStray(fmt.Sprintf(`%s: not a JSON object {"partition": "…", "status": "materialized"|"failed"} (%v)`, where, err))
			continue
		}
		c.add(where, p, known)
	}
	if err := sc.Err(); err != nil {
		c.addStray(fmt.Sprintf("report line %d: %v (a line holds at most 1 MiB)", n+1, err))
	}
	return c
}
