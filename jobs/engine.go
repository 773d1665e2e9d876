package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// WorkspaceFunc returns the current workspace and its assets' store ids.
type WorkspaceFunc func() (*catalog.Workspace, map[string]int64)

// Options tune the engine.
type Options struct {
	// WorkspaceSynced, when set, reports whether the workspace served is
	// the one synced into the shared catalog (the assets table); the
	// engine does not plan while it is not (workspace_check.go).
	WorkspaceSynced func() bool
	// SyncWorkspace, when set, syncs the workspace served into the
	// catalog if it is not yet; the engine calls it once its workspace
	// agrees with the live instances'.
	SyncWorkspace func(ctx context.Context) error
	// MaxConcurrentRuns is the global cap on running attempts (default 64).
	MaxConcurrentRuns int
	// Executor, when set, runs every asset (the bench's noop executor).
	Executor Executor
	// LeaseTTL: a running attempt whose owner has not heartbeated for this
	// long is interrupted and retried (default 5s); Heartbeat is the period.
	LeaseTTL, Heartbeat time.Duration
	// Tick is the controller's idle wake-up period (default 200ms).
	Tick time.Duration
	// ReportDir holds the command executor's report files (default: next to the database).
	ReportDir string
	// BaseURL is the server's own URL, given to http executors for callbacks.
	BaseURL string
	// ObserveAttempt, when set, is told of every attempt once its end is
	// committed (for metrics); it must return quickly.
	ObserveAttempt AttemptObserver
	// AutomationRetention: schedule ticks, sensor evaluations and pushed
	// events older than this are pruned, counts kept (default
	// DefaultAutomationRetention).
	AutomationRetention time.Duration
	// Owner is this instance's worker id (default: a new NewWorkerID);
	// serve gives the one it recorded its session keys under.
	Owner string
}

// NewWorkerID returns a new worker id, the owner of an instance's
// attempts and heartbeat.
func NewWorkerID() string { return "w_" + strings.ToLower(ulid.Make().String()) }

// DefaultAutomationRetention is how long automation history is kept unless
// serve --automation-retention says otherwise.
const DefaultAutomationRetention = 90 * 24 * time.Hour

// AutomationRetention is how long schedule ticks, sensor evaluations and
// pushed events are kept before they are pruned.
func (e *Engine) AutomationRetention() time.Duration { return e.opts.AutomationRetention }

// AttemptObserver receives a finished attempt's asset, state and duration.
type AttemptObserver func(asset, state string, d time.Duration)

// Engine creates and steers backfills and runs the controller loop.
type Engine struct {
	Store *db.Store
	Log   *slog.Logger
	Now   func() time.Time
	ws    WorkspaceFunc
	opts  Options

	secret []byte
	owner  string
	wake   chan struct{}
	done   chan completion
	broker *Broker

	mu      sync.Mutex
	running map[string]*active // run id → running attempt
	pools   *poolState
	rr      int

	spaceMu  sync.Mutex
	spaces   map[string]catalog.Space
	spacesAt time.Time
	spacesWS *catalog.Workspace // the workspace spaces were computed from

	recovery  recoveryHealth // see CrashRecoveryHealth
	segCache  segmentCache   // segments and ranges of the backfills being planned
	pushes    pushBatcher    // sensor events committed together
	demoFails demoFailures   // the demo executor's fail_keys attempts so far

	leadUntil atomic.Int64 // Unix ns until which this instance leads (Leading)
	lastBeat  atomic.Int64 // Unix ns of the last heartbeat recorded
	// Unix ns of the first heartbeat since the last that failed (0 while
	// they fail), and of the controller's last own try (lease_health.go).
	connectedSince, beatTried atomic.Int64

	steps atomic.Int64 // controller steps finished; tests wait on it to see that something did not happen

	// Several instances on one PostgreSQL store (instances.go).
	tails   *liveTails     // the running attempts' output kept for the others
	wsCheck workspaceCheck // the others' workspaces against this one's

	undeclared undeclaredLog // backfills not planned for undeclared assets (backfill_undeclared.go)
}

// NewEngine returns an engine; call Run to start its controller. It creates
// the run-id secret in the settings table on first use.
func NewEngine(ctx context.Context, store *db.Store, ws WorkspaceFunc, log *slog.Logger, opts Options) (*Engine, error) {
	if opts.MaxConcurrentRuns <= 0 {
		opts.MaxConcurrentRuns = 64
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 5 * time.Second
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = opts.LeaseTTL / 4
	}
	if opts.AutomationRetention <= 0 {
		opts.AutomationRetention = DefaultAutomationRetention
	}
	if opts.Tick <= 0 {
		opts.Tick = 200 * time.Millisecond
	}
	if opts.ReportDir == "" && store.Path != "" {
		opts.ReportDir = store.Path + ".reports"
	} else if opts.ReportDir == "" {
		// PostgreSQL: no file of the store; a report is read by the
		// instance whose command wrote it.
		opts.ReportDir = filepath.Join(os.TempDir(), "tessera-reports")
	}
	if opts.Owner == "" {
		opts.Owner = NewWorkerID()
	}
	e := &Engine{Store: store, Log: log, Now: time.Now, ws: ws, opts: opts,
		owner: opts.Owner, wake: make(chan struct{}, 1),
		done: make(chan completion, 65536), running: map[string]*active{}, broker: NewBroker()}
	e.pools = newPoolState()
	e.pools.record = e.recordSlowDown
	e.tails = newLiveTails()
	if err := store.EnlargeWriterCache(ctx); err != nil {
		return nil, err
	}
	secret, err := runSecret(ctx, store)
	if err != nil {
		return nil, err
	}
	e.secret = secret
	if store.Dialect() == db.Postgres {
		// Before the first step: an instance started with another
		// workspace than those running does not plan even once.
		if err := e.checkWorkspace(ctx); err != nil {
			log.Warn("workspace not compared with the other instances'", "err", err)
		}
	}
	return e, nil
}

// Broker lets live pages subscribe to backfill changes.
func (e *Engine) Broker() *Broker { return e.broker }

func (e *Engine) workspace() (*catalog.Workspace, map[string]int64) { return e.ws() }

// Wake asks the controller to reconcile now.
func (e *Engine) Wake() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Created is what Create answers.
type Created struct {
	Backfill db.Backfill
	Replayed bool // an earlier request with the same idempotency key
}

func requestHash(v any) string {
	if req, ok := v.(Request); ok {
		return requestHashOf(req) // the same hash, faster for a million keys
	}
	b, _ := json.Marshal(v)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12])
}

// Create validates and records a backfill in state PENDING. idemKey (the
// Idempotency-Key header) makes a repeated request return the same backfill;
// the same key with a different body is a conflict.
func (e *Engine) Create(ctx context.Context, req Request, idemKey, actor string) (Created, error) {
	if mm := e.WorkspaceMismatch(); mm != nil {
		return Created{}, mm.Refusal("create backfills")
	}
	hash := requestHash(req)
	// Keys are scoped to who sends them: another user's request with the
	// same key is another request.
	stored := ""
	if idemKey != "" {
		if len(idemKey) > MaxRequestIDLen {
			return Created{}, bad("Idempotency-Key", "the idempotency key is longer than %d characters", MaxRequestIDLen)
		}
		stored = actor + "\x1f" + idemKey
		if b, err := e.Store.BackfillByRequestKey(ctx, stored); err == nil {
			if b.RequestHash != hash {
				return Created{}, keyReused(idemKey, b.ID)
			}
			return Created{Backfill: b, Replayed: true}, nil
		} else if !errors.Is(err, db.ErrNotFound) {
			return Created{}, err
		}
	}
	r, err := e.resolve(ctx, req)
	if err != nil {
		return Created{}, err
	}
	var key *string
	if stored != "" {
		key = &stored
	}
	b, err := e.insert(ctx, r, hash, key, nil, nil, actor)
	if err != nil {
		if idemKey != "" && db.IsUniqueViolation(err) {
			// A concurrent request with the same key won the race.
			if b, err2 := e.Store.BackfillByRequestKey(ctx, stored); err2 == nil {
				if b.RequestHash != hash {
					return Created{}, keyReused(idemKey, b.ID)
				}
				return Created{Backfill: b, Replayed: true}, nil
			}
		}
		return Created{}, err
	}
	e.Wake()
	return Created{Backfill: b}, nil
}

// keyReused is the conflict of an Idempotency-Key sent again with another body.
func keyReused(idemKey, backfillID string) error {
	return &InputError{Field: "Idempotency-Key", Conflict: true, Code: CodeKeyReused, Params: map[string]string{"backfill": backfillID},
		Msg: fmt.Sprintf("Idempotency-Key %q was used for a different request (backfill %s)", idemKey, backfillID)}
}

func (e *Engine) insert(ctx context.Context, r *resolved, hash string, key, parent, retryID *string, actor string) (db.Backfill, error) {
	var created db.Backfill
	err := e.Store.Tx(ctx, func(tx *db.Tx) error {
		var err error
		created, err = e.insertTx(ctx, tx, r, hash, key, parent, retryID, actor)
		return err
	})
	if err != nil {
		return db.Backfill{}, err
	}
	e.broker.Publish(created.ID)
	return created, nil
}

// insertTx records the backfill r in tx (PENDING, version 1) and answers
// it as created, read in tx: the controller may plan it the moment tx
// commits.
func (e *Engine) insertTx(ctx context.Context, tx *db.Tx, r *resolved, hash string, key, parent, retryID *string, actor string) (db.Backfill, error) {
	now := e.Now()
	id := "bf_" + strings.ToLower(ulid.Make().String())
	assets := make([]string, len(r.assets))
	for i, a := range r.assets {
		assets[i] = a.Key
	}
	aj, _ := json.Marshal(assets)
	var sj []byte
	if r.req.Selector.Type == "explicit" { // its keys are in the event and backfill_keys
		sj, _ = json.Marshal(map[string]any{"type": "explicit", "count": len(r.keys)})
	} else {
		sj, _ = json.Marshal(r.req.Selector)
	}
	for i := range r.segments {
		r.segments[i].BackfillID = id
	}
	b := db.Backfill{ID: id, Title: r.req.Title, State: db.BackfillPending, StateVersion: 1, Assets: string(aj), Selector: string(sj),
		ChunkSize: r.req.ChunkSize, MaxConcurrentRuns: r.req.MaxConcurrentRuns, Priority: r.req.Priority,
		TotalPartitions: r.total, TotalChunks: r.chunks, ParentBackfillID: parent, RetryRequestID: retryID, RequestKey: key, RequestHash: hash,
		CreatedBy: actor, CreatedAt: db.Millis(now), UpdatedAt: db.Millis(now)}
	if err := db.Emit(ctx, tx, db.EvBackfillCreated, "backfill:"+id, actor,
		db.BackfillCreated{Backfill: b, Segments: r.segments, Ranges: r.ranges, Keys: r.keys}, "", now); err != nil {
		return db.Backfill{}, err
	}
	return db.BackfillTx(ctx, tx, id)
}

// BatchItem is one request of CreateBatch, with its idempotency key and
// who sends it.
type BatchItem struct {
	Req     Request
	IdemKey string
	Actor   string
	// resolved, when set, is Req resolved already (by the caller's
	// goroutine, so that many callers resolve at once).
	resolved *resolved
}

// CreateBatch creates the backfills of items in one transaction, each as
// Create would (an idempotency key its actor used already answers the
// backfill it created, a different request with it is a conflict), and
// calls then in that transaction for each backfill created or found, so
// that what the caller records about it commits with it. An item the
// engine refuses gets its error in errs[i] and is left out; an error of
// the store or of then aborts the batch (err).
func (e *Engine) CreateBatch(ctx context.Context, items []BatchItem, then func(tx *db.Tx, i int, c Created) error) (errs []error, err error) {
	return e.CreateBatchThen(ctx, items, then, nil)
}

// CreateBatchThen is CreateBatch with done, when not nil, called last in
// the transaction (with the refusals so far): what it writes commits with
// the backfills, and its error aborts them all.
func (e *Engine) CreateBatchThen(ctx context.Context, items []BatchItem, then func(tx *db.Tx, i int, c Created) error, done func(tx *db.Tx, errs []error) error) (errs []error, err error) {
	if mm := e.WorkspaceMismatch(); mm != nil {
		return nil, mm.Refusal("create backfills")
	}
	errs = make([]error, len(items))
	rs := make([]*resolved, len(items))
	for i, it := range items {
		if len(it.IdemKey) > MaxRequestIDLen {
			errs[i] = bad("Idempotency-Key", "the idempotency key is longer than %d characters", MaxRequestIDLen)
			continue
		}
		if it.resolved != nil {
			rs[i] = it.resolved
			continue
		}
		if rs[i], errs[i] = e.resolve(ctx, it.Req); errs[i] != nil {
			rs[i] = nil
		}
	}
	var made []string
	// Someone waits for these backfills: the controller's next step waits
	// for them (writer_priority.go).
	endUrgent := e.Store.BeginUrgent()
	defer endUrgent()
	err = e.Store.Tx(ctx, func(tx *db.Tx) error {
		made = made[:0]
		for i, it := range items {
			if rs[i] == nil {
				continue
			}
			hash := requestHash(it.Req)
			stored := it.Actor + "\x1f" + it.IdemKey
			c := Created{}
			if b, err := db.BackfillByRequestKeyTx(ctx, tx, stored); err == nil {
				if b.RequestHash != hash {
					errs[i] = keyReused(it.IdemKey, b.ID)
					continue
				}
				c = Created{Backfill: b, Replayed: true}
			} else if !errors.Is(err, db.ErrNotFound) {
				return err
			} else {
				b, err := e.insertTx(ctx, tx, rs[i], hash, &stored, nil, nil, it.Actor)
				if err != nil {
					return err
				}
				c.Backfill = b
				made = append(made, b.ID)
			}
			if err := then(tx, i, c); err != nil {
				return err
			}
		}
		if done != nil {
			return done(tx, errs)
		}
		return nil
	})
	if err != nil {
		return errs, err
	}
	for _, id := range made {
		e.broker.Publish(id)
	}
	if len(made) > 0 {
		e.Wake()
	}
	return errs, nil
}

// Transition actions.
const (
	ActPause  = "pause"
	ActResume = "resume"
	ActCancel = "cancel"
)

// Transition pauses, resumes or cancels a backfill. expected (when >0) must
// equal the current state_version.
func (e *Engine) Transition(ctx context.Context, id, action string, expected int64, terminate bool, actor string) (db.Backfill, error) {
	now := e.Now()
	var after db.Backfill
	err := e.Store.Tx(ctx, func(tx *db.Tx) error {
		// Between two controller steps of any instance: a step of another
		// instance moving this backfill on (to SUCCEEDED, say) meanwhile
		// would otherwise be overwritten, and the events of the two would
		// replay in another order than they were applied.
		if err := db.LockSteps(ctx, tx); err != nil {
			return err
		}
		b, err := db.BackfillTx(ctx, tx, id)
		if err != nil {
			return notFound(err)
		}
		if expected < 0 {
			return invalidExpected(expected)
		}
		if expected > 0 && expected != b.StateVersion {
			return staleVersion(id, b.StateVersion, b.State, expected)
		}
		var to string
		switch action {
		case ActPause:
			if b.State == db.BackfillRunning || b.State == db.BackfillPending {
				to = db.BackfillPaused
			}
		case ActResume:
			if b.State == db.BackfillPaused {
				to = db.BackfillRunning
			}
		case ActCancel:
			if b.State == db.BackfillPending || b.State == db.BackfillRunning || b.State == db.BackfillPaused {
				to = db.BackfillCanceling
			}
			if b.State == db.BackfillCanceling && terminate && !b.Terminate {
				// A graceful cancel escalated: kill the runs still active.
				to = db.BackfillCanceling
			}
		default:
			return bad("action", "unknown action %q", action)
		}
		if to == "" {
			msg := fmt.Sprintf("cannot %s backfill %s: it is %s (allowed from %s)", action, id, b.State, allowedFrom(action))
			if action == ActCancel && b.State == db.BackfillCanceling {
				msg = fmt.Sprintf("backfill %s is already CANCELING; only a cancel with terminate can still end its running runs", id)
				if b.Terminate {
					msg = fmt.Sprintf("backfill %s is already CANCELING and its running runs are being terminated", id)
				}
			}
			return &InputError{Conflict: true, Field: "state", Msg: msg}
		}
		ev := db.BackfillStateChanged{ID: id, From: b.State, To: to, Version: b.StateVersion + 1, Terminate: terminate && action == ActCancel, At: db.Millis(now)}
		if err := db.Emit(ctx, tx, db.EvBackfillState, "backfill:"+id, actor, ev, "", now); err != nil {
			return err
		}
		if to == db.BackfillCanceling && b.RunsRunning == 0 {
			ev2 := db.BackfillStateChanged{ID: id, From: to, To: db.BackfillCanceled, Version: b.StateVersion + 2, At: db.Millis(now), Reason: "no run active"}
			if ev2.Failures, err = e.queuedRunFailures(ctx, tx, &b); err != nil {
				return err
			}
			if err := db.Emit(ctx, tx, db.EvBackfillState, "backfill:"+id, actor, ev2, "", now); err != nil {
				return err
			}
		}
		// The answer is the state this transition made, read in its
		// transaction (the controller may move on the moment it commits).
		after, err = db.BackfillTx(ctx, tx, id)
		return err
	})
	if err != nil {
		return db.Backfill{}, err
	}
	e.broker.Publish(id)
	e.Wake()
	return after, nil
}

func allowedFrom(action string) string {
	switch action {
	case ActPause:
		return "PENDING or RUNNING"
	case ActResume:
		return "PAUSED"
	}
	return "PENDING, RUNNING or PAUSED"
}

// RetryOptions are the settings of a retry-failed request; a zero value
// takes the parent's (chunk size, concurrency) or skips the check
// (ExpectedStateVersion: the parent's state_version the caller last saw).
type RetryOptions struct {
	RequestID            string
	ChunkSize            int64
	MaxConcurrentRuns    int64
	ExpectedStateVersion int64
}

// MaxRequestIDLen bounds retry request ids and idempotency keys.
const MaxRequestIDLen = 200

// RetryFailed creates a child backfill holding the failed and upstream-failed
// partitions of a terminal or paused parent. The same request id returns the
// same child.
// staleVersion is the 409 of an expected_state_version that is not the
// backfill's: what it is now.
func staleVersion(id string, version int64, state string, expected int64) *InputError {
	return &InputError{Conflict: true, Field: "expected_state_version", Code: CodeVersionConflict,
		Msg:    fmt.Sprintf("backfill %s is at version %d (state %s), not %d: it changed since you read it", id, version, state, expected),
		Params: map[string]string{"backfill": id, "state": state, "version": strconv.FormatInt(version, 10), "expected": strconv.FormatInt(expected, 10)}}
}

// invalidExpected is the 400 of an expected_state_version below 1.
func invalidExpected(got int64) *InputError {
	return &InputError{Field: "expected_state_version", Code: CodeInvalidExpectedVersion,
		Msg: fmt.Sprintf("expected_state_version must be a positive number, got %d", got), Params: map[string]string{"got": strconv.FormatInt(got, 10)}}
}
