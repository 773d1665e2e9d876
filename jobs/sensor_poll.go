package jobs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// EvaluatorAnswer is what a poll sensor's evaluator answers (JSON): the
// new cursor (absent: unchanged), run requests, and/or why it requests
// nothing.
type EvaluatorAnswer struct {
	Cursor      *string      `json:"cursor,omitempty"`
	RunRequests []RunRequest `json:"run_requests,omitempty"`
	SkipReason  string       `json:"skip_reason,omitempty"`
}

// RunRequest asks for a backfill of partitions (keys, or a range) of the
// sensor's assets (all unless Assets names some). A RunKey launches at
// most once per sensor, ever.
type RunRequest struct {
	Assets     []string `json:"assets,omitempty"`
	Partitions []string `json:"partitions,omitempty"`
	Start      string   `json:"start,omitempty"`
	End        string   `json:"end,omitempty"`
	RunKey     string   `json:"run_key,omitempty"`
}

// RequestOutcome is what became of one run request.
type RequestOutcome struct {
	RunRequest
	Backfill string   `json:"backfill,omitempty"`
	Skipped  string   `json:"skipped,omitempty"` // why it launched nothing (run key used)
	Preview  *Preview `json:"preview,omitempty"` // dry run
}

// Evaluation is one evaluation of a poll sensor, as recorded.
type Evaluation struct {
	Record   db.SensorEvaluation `json:"evaluation"`
	Outcomes []RequestOutcome    `json:"requests"`
}

// Sensors evaluates the workspace's poll sensors every interval, one
// evaluation at a time per sensor, and answers operators' evaluate-now,
// pause, resume and cursor resets.
type Sensors struct {
	e    *Engine
	log  *slog.Logger
	mu   sync.Mutex
	busy map[string]bool
}

// NewSensors returns e's sensor runner.
func NewSensors(e *Engine, log *slog.Logger) *Sensors {
	return &Sensors{e: e, log: log, busy: map[string]bool{}}
}

// maxAnswer bounds an evaluator's answer; logTail its kept log.
const (
	maxAnswer = 1 << 20
	logTail   = 8 << 10
	maxBack   = time.Hour
)

// Run starts the due evaluations until ctx ends.
func (s *Sensors) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	lastPrune := time.Time{}
	every(ctx, 500*time.Millisecond, func() {
		if !s.e.Leading() {
			return // another instance polls (leader.go)
		}
		if now := s.e.Now(); lastPrune.IsZero() || now.Sub(lastPrune) >= pruneEvery {
			// Once at the start, then hourly.
			if _, err := s.Prune(ctx, now); err != nil && ctx.Err() == nil {
				s.log.Error("sensors: pruning old evaluations and events failed; retrying in an hour", "err", err)
			}
			lastPrune = now
		}
		ws, _ := s.e.workspace()
		byName, err := s.e.Store.SensorStates(ctx)
		if err != nil {
			return
		}
		now := db.Millis(s.e.Now())
		for _, sn := range ws.Sensors {
			st, seen := byName[sn.Name]
			if !sn.Poll() || !sn.Enabled || st.Paused || (seen && st.NextEvaluationAt != nil && *st.NextEvaluationAt > now) {
				continue
			}
			if !s.claim(sn.Name) {
				continue
			}
			wg.Add(1)
			go func(sn *catalog.Sensor) {
				defer wg.Done()
				defer s.release(sn.Name)
				if _, err := s.evaluate(ctx, sn, false, "scheduler"); err != nil && ctx.Err() == nil {
					s.log.Error("sensor evaluation failed", "sensor", sn.Name, "err", err)
				}
			}(sn)
		}
	})
}

// Prune deletes the evaluations and pushed events older than the
// retention before now, in batches, each sensor counting its own. A pruned
// event's message id is kept (it still answers as a duplicate and launches
// nothing); run keys are never pruned.
func (s *Sensors) Prune(ctx context.Context, now time.Time) (db.Pruned, error) {
	p, err := s.e.Store.PruneSensorHistory(ctx, db.Millis(now.Add(-s.e.AutomationRetention())), db.PruneBatch)
	if p.Evaluations > 0 || p.Events > 0 {
		s.log.Info("sensors: pruned history older than the retention", "evaluations", p.Evaluations, "events", p.Events,
			"retention", s.e.AutomationRetention().String())
	}
	return p, err
}

func (s *Sensors) claim(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy[name] {
		return false
	}
	s.busy[name] = true
	return true
}

func (s *Sensors) release(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.busy, name)
}

// Evaluate evaluates poll sensor name now (dryRun: shows what it would
// request, launches nothing and keeps the cursor), one evaluation at a
// time per sensor (409 while one runs, and for a sensor disabled in the
// workspace unless it is a dry run). A paused sensor may be evaluated now:
// pausing stops its scheduled evaluations and refuses pushed events.
func (s *Sensors) Evaluate(ctx context.Context, name string, dryRun bool, actor string) (Evaluation, error) {
	sn, err := s.e.sensorOf(name)
	if err != nil {
		return Evaluation{}, err
	}
	if !sn.Poll() {
		return Evaluation{}, &InputError{Conflict: true, Field: "sensor", Code: CodeNotPollSensor, Params: map[string]string{"sensor": name},
			Msg: fmt.Sprintf("sensor %s has no evaluator: it is pushed events, it does not poll", name)}
	}
	if !sn.Enabled && !dryRun {
		// Disabled in the workspace: it launches nothing; a dry run still
		// shows what it would.
		return Evaluation{}, &InputError{Conflict: true, Field: "sensor", Code: CodeSensorPaused, Params: map[string]string{"sensor": name, "state": "disabled in the workspace"},
			Msg: fmt.Sprintf("sensor %s is disabled in the workspace; it launches nothing (a dry run shows what it would)", name)}
	}
	if !s.claim(name) {
		return Evaluation{}, &InputError{Conflict: true, Field: "sensor", Code: CodeSensorState, Params: map[string]string{"sensor": name, "state": "evaluating"},
			Msg: fmt.Sprintf("sensor %s is being evaluated; try again when it is done", name)}
	}
	defer s.release(name)
	return s.evaluate(ctx, sn, dryRun, actor)
}

// evaluate calls sn's evaluator with its cursor and launches the run
// requests it answers, moving the cursor in the same transaction with a
// compare-and-set on the state version it read: never lost, never ahead
// of what was launched. A failing evaluator (error, timeout, bad answer)
// keeps the cursor, shows ERROR and backs off. The returned error is the
// store's; an evaluator's failure is in the evaluation.
func (s *Sensors) evaluate(ctx context.Context, sn *catalog.Sensor, dryRun bool, actor string) (Evaluation, error) {
	start := s.e.Now()
	st, err := s.e.Store.EnsureSensorState(ctx, sn.Name, db.Millis(start))
	if err != nil {
		return Evaluation{}, err
	}
	kind := db.EvalEvaluation
	if dryRun {
		kind = db.EvalDryRun
	}
	rec := db.SensorEvaluation{Sensor: sn.Name, Kind: kind, StartedAt: db.Millis(start), CursorBefore: st.Cursor, CursorAfter: st.Cursor, Requests: "[]", Actor: actor}
	answer, log, callErr := s.call(ctx, sn, st.Cursor)
	if log != "" {
		rec.LogTail = &log
	}
	var reqs []Request
	if callErr == nil {
		reqs, callErr = s.requests(sn, answer)
	}
	rec.DurationMs = s.e.Now().Sub(start).Milliseconds()
	if callErr != nil {
		msg := callErr.Error()
		rec.Error = &msg
		if dryRun {
			rec.ID, err = s.e.Store.RecordDryRun(ctx, rec)
			return Evaluation{Record: rec}, err
		}
		back := backoff(sn.Interval, st.Failures+1)
		rec.ID, err = s.e.Store.FailEvaluation(ctx, db.Millis(start.Add(back)), rec)
		return Evaluation{Record: rec}, err
	}
	if answer.Cursor != nil {
		rec.CursorAfter = answer.Cursor
	}
	if answer.SkipReason != "" {
		rec.SkipReason = &answer.SkipReason
	}
	outcomes := make([]RequestOutcome, len(answer.RunRequests))
	for i, rr := range answer.RunRequests {
		outcomes[i].RunRequest = rr
	}
	if dryRun {
		// A request a real evaluation would skip (its run key used, or
		// repeated in the answer) says so rather than preview a backfill.
		if err := s.skipUsedRunKeys(ctx, sn.Name, outcomes); err != nil {
			return Evaluation{}, err
		}
		for i := range reqs {
			if outcomes[i].Skipped != "" {
				continue
			}
			if pv, err := s.e.Preview(ctx, reqs[i]); err == nil {
				outcomes[i].Preview = pv
			}
		}
		rec.Requests = StoredOutcomes(outcomes)
		rec.ID, err = s.e.Store.RecordDryRun(ctx, rec)
		return Evaluation{Record: rec, Outcomes: outcomes}, err
	}
	return s.launchRequests(ctx, sn, st, rec, reqs, outcomes, start)
}

// launchRequests creates the backfills of an evaluation's run requests
// (those whose run key is unused) and finishes the evaluation in one
// transaction.
func (s *Sensors) launchRequests(ctx context.Context, sn *catalog.Sensor, st db.SensorState, rec db.SensorEvaluation, reqs []Request, outcomes []RequestOutcome, start time.Time) (Evaluation, error) {
	if err := s.skipUsedRunKeys(ctx, sn.Name, outcomes); err != nil {
		return Evaluation{}, err
	}
	var items []BatchItem
	var owner []int
	for i, o := range outcomes {
		if o.Skipped != "" {
			continue
		}
		items = append(items, BatchItem{Req: reqs[i], IdemKey: "eval:" + strconv.FormatInt(st.StateVersion, 10) + ":" + strconv.Itoa(i), Actor: sensorActor(sn.Name)})
		owner = append(owner, i)
	}
	next := db.Millis(start.Add(sn.Interval))
	var launched int64
	_, err := s.e.CreateBatchThen(ctx, items, func(tx *db.Tx, j int, c Created) error {
		i := owner[j]
		outcomes[i].Backfill = c.Backfill.ID
		launched++
		if outcomes[i].RunKey == "" {
			return nil
		}
		return db.RecordRunKeyTx(ctx, tx, db.SensorRunKey{Sensor: sn.Name, RunKey: outcomes[i].RunKey, BackfillID: c.Backfill.ID, CreatedAt: rec.StartedAt})
	}, func(tx *db.Tx, refused []error) error {
		for j, r := range refused {
			if r != nil {
				return fmt.Errorf("run request %d: %w", owner[j]+1, r)
			}
		}
		rec.Requests = StoredOutcomes(outcomes)
		var err error
		rec.ID, err = db.FinishEvaluationTx(ctx, tx, st.StateVersion, launched, next, rec)
		return err
	})
	if errors.Is(err, db.ErrCursorMoved) {
		// Another evaluation or a reset moved the state: this one launched
		// nothing; it is recorded as such.
		msg := "the sensor's cursor moved during the evaluation (another evaluation or a reset); nothing launched, the cursor is the other's"
		rec.Error, rec.CursorAfter, rec.Requests = &msg, st.Cursor, "[]"
		rec.ID, err = s.e.Store.RecordDryRun(ctx, rec)
		return Evaluation{Record: rec}, err
	}
	var ie *InputError
	if errors.As(err, &ie) {
		msg := err.Error()
		rec.Error, rec.CursorAfter, rec.Requests = &msg, st.Cursor, "[]"
		back := backoff(sn.Interval, st.Failures+1)
		rec.ID, err = s.e.Store.FailEvaluation(ctx, db.Millis(start.Add(back)), rec)
		return Evaluation{Record: rec}, err
	}
	if err != nil {
		return Evaluation{}, err
	}
	if launched > 0 {
		s.log.Info("sensor launched backfills", "sensor", sn.Name, "backfills", launched)
	}
	return Evaluation{Record: rec, Outcomes: outcomes}, nil
}

// skipUsedRunKeys marks the outcomes whose run key sensor used already, or
// an earlier request of the same answer uses, as skipped.
func (s *Sensors) skipUsedRunKeys(ctx context.Context, sensor string, outcomes []RequestOutcome) error {
	var keys []string
	for _, o := range outcomes {
		if o.RunKey != "" {
			keys = append(keys, o.RunKey)
		}
	}
	used, err := s.e.Store.UsedRunKeys(ctx, sensor, keys)
	if err != nil {
		return err
	}
	inAnswer := map[string]bool{}
	for i, o := range outcomes {
		if o.RunKey != "" && (used[o.RunKey] || inAnswer[o.RunKey]) {
			outcomes[i].Skipped = "run_key " + o.RunKey + " launched already"
			continue
		}
		inAnswer[o.RunKey] = o.RunKey != ""
	}
	return nil
}

// requests checks an answer's run requests against the sensor and turns
// them into backfill requests: an unknown asset or partition fails the
// whole evaluation before anything launches.
func (s *Sensors) requests(sn *catalog.Sensor, a EvaluatorAnswer) ([]Request, error) {
	reqs := make([]Request, len(a.RunRequests))
	for i, rr := range a.RunRequests {
		if len(rr.RunKey) > catalog.MaxMessageIDLen {
			return nil, fmt.Errorf("run request %d: run_key is %d bytes long; at most %d", i+1, len(rr.RunKey), catalog.MaxMessageIDLen)
		}
		req, err := s.e.eventRequest(sn, PushEvent{MessageID: rr.RunKey, Assets: rr.Assets, Partitions: rr.Partitions, Start: rr.Start, End: rr.End})
		if err == nil {
			_, err = s.e.resolve(context.Background(), req)
		}
		if err != nil {
			return nil, fmt.Errorf("run request %d: %w", i+1, err)
		}
		req.Title = fmt.Sprintf("Sensor %s, request %d", sn.Name, i+1)
		if rr.RunKey != "" {
			req.Title = fmt.Sprintf("Sensor %s, run key %s", sn.Name, rr.RunKey)
		}
		reqs[i] = req
	}
	return reqs, nil
}

// call runs sn's evaluator with cursor and decodes its answer; log is its
// output's tail (a command's stderr, an endpoint's error body).
func (s *Sensors) call(ctx context.Context, sn *catalog.Sensor, cursor *string) (EvaluatorAnswer, string, error) {
	ctx, cancel := context.WithTimeout(ctx, sn.Timeout)
	defer cancel()
	var raw []byte
	var log string
	var err error
	if sn.Evaluator.Kind == catalog.ExecutorHTTP {
		raw, log, err = callHTTP(ctx, sn, cursor)
	} else {
		raw, log, err = callCommand(ctx, sn, cursor, s.procFile(sn.Name))
	}
	if ctx.Err() == context.DeadlineExceeded {
		return EvaluatorAnswer{}, log, fmt.Errorf("the evaluator did not answer within its timeout, %s; it was stopped", sn.Timeout)
	}
	if err != nil {
		return EvaluatorAnswer{}, log, err
	}
	var a EvaluatorAnswer
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return EvaluatorAnswer{}, log, fmt.Errorf("the evaluator's answer is not the JSON expected ({\"cursor\": …, \"run_requests\": […], \"skip_reason\": …}): %v; it began %q", err, head(raw, 120))
	}
	if off := dec.InputOffset(); len(bytes.TrimSpace(raw[off:])) > 0 {
		// One JSON object, nothing after it but white space: a second
		// object or text after the first is an answer garbled, not one to
		// act on half of.
		return EvaluatorAnswer{}, log, fmt.Errorf("the evaluator's answer is not one JSON object: after the object comes %q; print the object alone", head(bytes.TrimSpace(raw[off:]), 120))
	}
	return a, log, nil
}

// backoff is how long a poll sensor waits after its failures-th failure in
// a row: its interval doubled for each, at most maxBack. The doubling stops
// at maxBack, so a long interval after many failures never overflows into
// a wait in the past (which evaluated a failing sensor on every tick).
func backoff(interval time.Duration, failures int64) time.Duration {
	back := interval
	for i := int64(0); i < failures && back < maxBack; i++ {
		back *= 2
	}
	return min(back, maxBack)
}

func head(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// procFile is the file that names the process group of sensor name's
// running evaluator, for the next evaluation to kill what is left of it
// after a crash (killOrphansAt): the server's death kills the evaluator's
// main process (Pdeathsig), not what it started in the background. Beside
// the command executor's report files, named by a hash of the sensor's
// name (any characters); servers of several databases on one machine may
// share the folder, and a file names its server, so none kills another's
// evaluator.
func (s *Sensors) procFile(name string) string {
	h := sha256.Sum256([]byte(name))
	return filepath.Join(s.e.opts.ReportDir, "sensor-"+hex.EncodeToString(h[:8])+".proc")
}

func callCommand(ctx context.Context, sn *catalog.Sensor, cursor *string, procFile string) ([]byte, string, error) {
	ex := sn.Evaluator
	argv := ex.Command
	if ex.Shell {
		argv = []string{"sh", "-c", ex.Command[0]}
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = ex.Dir
	// Not the server's own TESSERA_* settings (session keys, tokens, the
	// database URL), as for an asset's command.
	cmd.Env = withoutServerSettings(os.Environ(), len(ex.Env)+2)
	for k, v := range ex.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cur := ""
	if cursor != nil {
		cur = *cursor
	}
	cmd.Env = append(cmd.Env, "TESSERA_SENSOR_NAME="+sn.Name, "TESSERA_SENSOR_CURSOR="+cur)
	var out bytes.Buffer
	errTail := &tailBuffer{max: logTail}
	stdout := &limitWriter{w: &out, n: maxAnswer}
	cmd.Stdout, cmd.Stderr = stdout, errTail
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = commandWaitDelay
	// What a crash left of an earlier evaluation (a server killed while it
	// ran) is killed first; failing that is no reason not to evaluate.
	_, _ = killOrphansAt(procFile)
	err := cmd.Start()
	if err == nil {
		if os.MkdirAll(filepath.Dir(procFile), 0o755) == nil && writeOwnedProcFile(procFile, cmd.Process.Pid) == nil {
			defer os.Remove(procFile)
		}
		err = cmd.Wait()
	}
	if cmd.Process != nil {
		// What the evaluator left running in its group (a helper it
		// started in the background) ends with it, as an executor's does.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		return nil, errTail.String(), fmt.Errorf("the evaluator exited with status %d", ee.ExitCode())
	}
	if err != nil && ctx.Err() == nil {
		return nil, errTail.String(), fmt.Errorf("run the evaluator %s: %w", argv[0], err)
	}
	if err == nil && stdout.over {
		// Its first MiB is not its answer: say so rather than decode it
		// cut short.
		return nil, errTail.String(), fmt.Errorf("the evaluator printed more than %d bytes on stdout, the most an answer may be; print only the JSON answer there (logs go to stderr)", maxAnswer)
	}
	return out.Bytes(), errTail.String(), err
}

func callHTTP(ctx context.Context, sn *catalog.Sensor, cursor *string) ([]byte, string, error) {
	body, _ := json.Marshal(map[string]any{"sensor": sn.Name, "cursor": cursor})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sn.Evaluator.HTTP.URL, bytes.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range sn.Evaluator.HTTP.Headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("call the evaluator: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, "", fmt.Errorf("read the evaluator's answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, head(raw, logTail), fmt.Errorf("the evaluator answered %s", resp.Status)
	}
	if len(raw) > maxAnswer {
		return nil, "", fmt.Errorf("the evaluator's answer is larger than %d bytes", maxAnswer)
	}
	return raw, "", nil
}

// limitWriter keeps the first n bytes written to it; over says that more
// were written.
type limitWriter struct {
	w    io.Writer
	n    int
	over bool
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if len(p) > l.n {
		l.over = true
	}
	if l.n > 0 {
		k := min(len(p), l.n)
		l.n -= k
		if _, err := l.w.Write(p[:k]); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// SetPaused pauses or resumes sensor name (409 when it is so already).
func (s *Sensors) SetPaused(ctx context.Context, name string, paused bool, actor string) (db.SensorState, error) {
	if _, err := s.e.sensorOf(name); err != nil {
		return db.SensorState{}, err
	}
	now := db.Millis(s.e.Now())
	already := func(state string) error {
		return &InputError{Conflict: true, Field: "state", Code: CodeSensorState, Params: map[string]string{"sensor": name, "state": state},
			Msg: fmt.Sprintf("sensor %s is already %s", name, state)}
	}
	if paused {
		if _, err := s.e.Store.EnsureSensorState(ctx, name, now); err != nil {
			return db.SensorState{}, err
		}
	} else if _, err := s.e.Store.SensorStateOf(ctx, name); errors.Is(err, db.ErrNotFound) {
		// Never paused, so running: the refused resume writes nothing.
		return db.SensorState{Name: name, Status: db.SensorOK}, already("running")
	} else if err != nil {
		return db.SensorState{}, err
	}
	st, changed, err := s.e.Store.SetSensorPaused(ctx, name, paused, actor, now)
	if err == nil && !changed {
		state := "running"
		if paused {
			state = "paused"
		}
		err = already(state)
	}
	return st, err
}

// ResetCursor sets poll sensor name's cursor (nil: none), recorded with
// actor; an evaluation in flight then launches nothing. A push sensor has
// no cursor (409).
func (s *Sensors) ResetCursor(ctx context.Context, name string, cursor *string, actor string) (db.SensorState, error) {
	sn, err := s.e.sensorOf(name)
	if err != nil {
		return db.SensorState{}, err
	}
	if !sn.Poll() {
		return db.SensorState{}, &InputError{Conflict: true, Field: "sensor", Code: CodeNotPollSensor, Params: map[string]string{"sensor": name},
			Msg: fmt.Sprintf("sensor %s has no evaluator: it is pushed events and keeps no cursor", name)}
	}
	now := db.Millis(s.e.Now())
	if _, err := s.e.Store.EnsureSensorState(ctx, name, now); err != nil {
		return db.SensorState{}, err
	}
	return s.e.Store.ResetSensorCursor(ctx, name, cursor, actor, now)
}
