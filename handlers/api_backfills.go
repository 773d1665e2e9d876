package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/views"
)

// BackfillJSON is a backfill as the API shows it.
type BackfillJSON struct {
	ID                 string           `json:"id"`
	Title              string           `json:"title"`
	State              string           `json:"state"`
	StateVersion       int64            `json:"state_version"`
	Assets             []string         `json:"assets"`
	Selector           json.RawMessage  `json:"selector"`
	Selection          string           `json:"selection"` // the selector in words, as on the page
	ChunkSize          int64            `json:"chunk_size"`
	MaxConcurrentRuns  int64            `json:"max_concurrent_runs"`
	Priority           int64            `json:"priority"`
	TotalPartitions    int64            `json:"total_partitions"`
	TotalChunks        int64            `json:"total_chunks"`
	PlannedChunks      int64            `json:"planned_chunks"`
	Counts             map[string]int64 `json:"counts"`
	Partitions         map[string]int64 `json:"partitions"`
	PausedWithFailures bool             `json:"paused_with_failures"`
	Terminate          bool             `json:"terminate,omitempty"`
	ParentBackfillID   *string          `json:"parent_backfill_id"`
	// RecoveredBy is, for a FAILED backfill, the Retry failed child that
	// rebuilt everything it failed or skipped (directly, or through
	// retries of its own); null otherwise.
	RecoveredBy *string `json:"recovered_by"`
	// RecoveredByTitle is that retry's name (its title), for a reader.
	RecoveredByTitle *string `json:"recovered_by_title,omitempty"`
	RetryRequestID   *string `json:"retry_request_id,omitempty"`
	CreatedBy        string  `json:"created_by"`
	CreatedAt        string  `json:"created_at"`
	UpdatedAt        string  `json:"updated_at"`
	StartedAt        *string `json:"started_at"`
	FinishedAt       *string `json:"finished_at"`
	// Waiting says why a running backfill with no run running plans no
	// chunk (GET of one backfill only): its upstream, its pool's cap or
	// throttle, or the server's cap.
	Waiting *jobs.RunWait `json:"waiting,omitempty"`
}

// msTime writes a stored time (Unix milliseconds) as the API writes every
// time: RFC 3339, UTC, three fractional digits (catalog.APITimeLayout).
func msTime(ms int64) string { return db.FromMillis(ms).Format(timeFormat) }

// apiTime writes t as the API writes every time.
func apiTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func msTimePtr(ms *int64) *string {
	if ms == nil {
		return nil
	}
	s := msTime(*ms)
	return &s
}

// ToBackfillJSON converts a stored backfill.
func ToBackfillJSON(b db.Backfill) BackfillJSON {
	var assets []string
	_ = json.Unmarshal([]byte(b.Assets), &assets)
	queued := b.RunsActive - b.RunsRunning
	done := b.RunsSucceeded + b.RunsFailed + b.RunsCanceled
	pendingParts := max(b.TotalPartitions-b.PartitionsMaterialized-b.PartitionsFailed-b.PartitionsUpstreamFailed, 0)
	// The chunk counts add up to total_chunks: pending is never planned yet,
	// queued is planned and waiting (for a slot or a retry's backoff).
	pending := max(b.TotalChunks-done-b.RunsActive, 0)
	canceled, canceledParts := b.RunsCanceled, int64(0)
	// A canceled backfill never runs its unplanned chunks (nor, once it is
	// CANCELED, any partition not built): they count as canceled, not pending.
	if b.State == db.BackfillCanceling || b.State == db.BackfillCanceled {
		canceled, pending = canceled+pending, 0
		if b.State == db.BackfillCanceled {
			canceled, queued = canceled+queued, 0
		}
	}
	if b.State == db.BackfillCanceled {
		canceledParts, pendingParts = pendingParts, 0
	}
	return BackfillJSON{
		ID: b.ID, Title: b.Title, State: b.State, StateVersion: b.StateVersion, Assets: assets, Selector: json.RawMessage(b.Selector), Selection: describeSelection(b),
		ChunkSize: b.ChunkSize, MaxConcurrentRuns: b.MaxConcurrentRuns, Priority: b.Priority,
		TotalPartitions: b.TotalPartitions, TotalChunks: b.TotalChunks, PlannedChunks: b.NextChunk,
		Counts: map[string]int64{
			"succeeded": b.RunsSucceeded, "failed": b.RunsFailed, "canceled": canceled, "running": b.RunsRunning,
			"queued": queued, "pending": pending,
		},
		Partitions: map[string]int64{
			"materialized": b.PartitionsMaterialized, "failed": b.PartitionsFailed, "upstream_failed": b.PartitionsUpstreamFailed,
			"pending": pendingParts, "canceled": canceledParts,
		},
		PausedWithFailures: b.State == db.BackfillPaused && (b.RunsFailed > 0 || b.PartitionsFailed > 0),
		Terminate:          b.Terminate, ParentBackfillID: b.ParentBackfillID, RetryRequestID: b.RetryRequestID, CreatedBy: b.CreatedBy,
		CreatedAt: msTime(b.CreatedAt), UpdatedAt: msTime(b.UpdatedAt), StartedAt: msTimePtr(b.StartedAt), FinishedAt: msTimePtr(b.FinishedAt),
	}
}

// engineErr maps the engine's input errors to user errors.
func engineErr(err error) error {
	var ie *jobs.InputError
	if errors.As(err, &ie) {
		var ue *UserError
		switch {
		case ie.NotFound && errors.Is(err, db.ErrNotFound):
			return StoreNotFound(err)
		case ie.NotFound:
			ue = NotFound("%s", ie.Msg)
		case ie.Conflict:
			ue = Conflict("%s", ie.Msg)
			ue.Field = ie.Field
		default:
			ue = BadRequest(ie.Field, "%s", ie.Msg)
		}
		switch ie.Code {
		case jobs.CodeUnknownAsset:
			return withHint(ue, ie.Msg, HintAssetList, ie.Params)
		case jobs.CodeEmptyKeyList:
			return withHint(ue, ie.Msg, HintEmptyKeys, ie.Params)
		case jobs.CodeInvalidExpectedVersion:
			return withHint(ue, ie.Msg, HintExpectedVersion, ie.Params)
		case jobs.CodeWorkspaceDiffers:
			// This instance's workspace differs from the cluster's: the
			// message names the instance and what differs.
			ue.Code = ie.Code
		case jobs.CodeVersionConflict:
			withHint(ue, ie.Msg, HintRereadBackfill, ie.Params)
			// A page says it without versions, which it never shows.
			ue.Page = joinHint(fmt.Sprintf("backfill %s changed since you read it: it is now %s", ie.Params["backfill"],
				strings.ToLower(views.BackfillStateLabel(ie.Params["state"], 0))), pageHint(HintRereadBackfill, ie.Params))
			return ue
		}
		ue.Params = ie.Params
		return ue
	}
	if errors.Is(err, db.ErrNotFound) {
		return StoreNotFound(err)
	}
	return err
}

// engine is the engine the API and the pages steer backfills with (503
// when none runs on this server).
func (h *Handler) engine() (*jobs.Engine, error) {
	if h.Engine == nil {
		return nil, &UserError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "the backfill engine is not running on this server"}
	}
	return h.Engine, nil
}

// APIBackfillPreview answers what a backfill request would do, writing nothing.
func (h *Handler) APIBackfillPreview(c echo.Context) error {
	return h.withBackfillRequest(c, func(eng *jobs.Engine, req jobs.Request) error {
		pv, err := eng.Preview(c.Request().Context(), req)
		if err != nil {
			return engineErr(err)
		}
		wordEstimate(pv)
		return c.JSON(http.StatusOK, pv)
	})
}

// APIBackfillCreate creates a backfill (idempotent on Idempotency-Key).
func (h *Handler) APIBackfillCreate(c echo.Context) error {
	return h.withBackfillRequest(c, func(eng *jobs.Engine, req jobs.Request) error {
		key, err := idempotencyKey(c)
		if err != nil {
			return err
		}
		res, err := eng.Create(c.Request().Context(), req, key, Actor(c))
		if err != nil {
			uerr := engineErr(err)
			var ie *jobs.InputError
			if ue := (*UserError)(nil); errors.As(uerr, &ue) && errors.As(err, &ie) && ie.Code == jobs.CodeKeyReused {
				// The form makes a new key itself; an API client has to.
				withHint(ue, ie.Msg, HintIdempotencyConflict, map[string]string{"what": "request", "backfill": ie.Params["backfill"]})
			}
			return uerr
		}
		return createdBackfill(c, res)
	})
}

// withBackfillRequest runs run with the engine and the backfill request of
// the body (chunk_size and max_concurrent_runs may be left out); the memory
// its decoding held is given back when run is done.
func (h *Handler) withBackfillRequest(c echo.Context, run func(eng *jobs.Engine, req jobs.Request) error) error {
	eng, err := h.engine()
	if err != nil {
		return err
	}
	req := jobs.NewRequest()
	size, err := decodeBackfillRequest(c, &req)
	defer h.releaseMemory(size)
	if err != nil {
		return err
	}
	return run(eng, req)
}

// createdBackfill answers a created backfill: 201, or 200 when the request
// was a replay, with the backfill's API address in Location either way.
func createdBackfill(c echo.Context, res jobs.Created) error {
	status := http.StatusCreated
	if res.Replayed {
		status = http.StatusOK
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/backfills/"+url.PathEscape(res.Backfill.ID))
	return c.JSON(status, ToBackfillJSON(res.Backfill))
}

// BackfillList is a page of backfills.
type BackfillList struct {
	Backfills  []BackfillJSON `json:"backfills"`
	NextCursor string         `json:"next_cursor"` // "" on the last page
}

// DefaultBackfillPageLimit and MaxBackfillPageLimit bound ?limit= of the
// backfills list (the other lists: 100 and MaxPageLimit).
const (
	DefaultBackfillPageLimit = 50
	MaxBackfillPageLimit     = 500
)

// APIBackfillList lists backfills, newest first (?state=&cursor=&limit=).
func (h *Handler) APIBackfillList(c echo.Context) error {
	limit, err := pageLimit(c, DefaultBackfillPageLimit, MaxBackfillPageLimit)
	if err != nil {
		return err
	}
	states, err := stateParam(c, "state", "state", db.BackfillStates, strings.ToUpper)
	if err != nil {
		return err
	}
	before, err := cursorParam(c, 0, listCursorOf("bf", 1))
	if err != nil {
		return err
	}
	asset, err := h.assetFilter(c)
	if err != nil {
		return err
	}
	rows, err := h.Store.Backfills(c.Request().Context(), states, asset, before, limit+1)
	if err != nil {
		return err
	}
	rows, next := pageOf(rows, limit, func(last db.Backfill) string { return encodeCursor("bf", last.Seq) })
	out := BackfillList{Backfills: []BackfillJSON{}, NextCursor: next}
	recovered, err := h.recoveredBy(c.Request().Context(), rows)
	if err != nil {
		return err
	}
	for _, b := range rows {
		bj := ToBackfillJSON(b)
		bj.RecoveredBy, bj.RecoveredByTitle = recoveredPtr(recovered, b.ID)
		out.Backfills = append(out.Backfills, bj)
	}
	return c.JSON(http.StatusOK, out)
}

// assetFilter is the ?asset= of a backfill list: a declared asset, or "".
func (h *Handler) assetFilter(c echo.Context) (string, error) {
	asset := strings.TrimSpace(c.QueryParam("asset"))
	if asset != "" && h.Workspace().Workspace.Asset(asset) == nil {
		return "", withHint(BadRequest("asset", ""), fmt.Sprintf("unknown asset %q", asset), HintAssetList, map[string]string{"asset": asset})
	}
	return asset, nil
}

// APIBackfillGet shows one backfill.
func (h *Handler) APIBackfillGet(c echo.Context) error {
	b, err := h.Store.Backfill(c.Request().Context(), c.Param("id"))
	if err != nil {
		return engineErr(err)
	}
	out := ToBackfillJSON(b)
	recovered, err := h.recoveredBy(c.Request().Context(), []db.Backfill{b})
	if err != nil {
		return err
	}
	out.RecoveredBy, out.RecoveredByTitle = recoveredPtr(recovered, b.ID)
	if w := storeWait(h.Store.WriteHealth()); w != nil && b.State == db.BackfillRunning {
		// Nothing it does can be recorded: that is what it waits for,
		// whatever runs.
		out.Waiting = w
	} else if h.Engine != nil {
		if out.Waiting, err = h.Engine.NextChunkWait(c.Request().Context(), b); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, out)
}

// ChunkJSON is a chunk run as the API shows it: its times are RFC 3339
// strings, like every other time in the API (the stored rows and the events
// keep Unix milliseconds). The fields here hide db.Run's of the same name.
type ChunkJSON struct {
	db.Run
	NotBefore  *string `json:"not_before"`
	CreatedAt  string  `json:"created_at"`
	UpdatedAt  string  `json:"updated_at"`
	StartedAt  *string `json:"started_at"`
	FinishedAt *string `json:"finished_at"`
}

func toChunkJSON(r db.Run) ChunkJSON {
	return ChunkJSON{Run: r, NotBefore: msTimePtr(r.NotBefore), CreatedAt: msTime(r.CreatedAt), UpdatedAt: msTime(r.UpdatedAt),
		StartedAt: msTimePtr(r.StartedAt), FinishedAt: msTimePtr(r.FinishedAt)}
}

// AttemptJSON is an attempt as the API shows it.
type AttemptJSON struct {
	db.Attempt
	StartedAt  string  `json:"started_at"`
	FinishedAt *string `json:"finished_at"`
}

// ConflictJSON is a recorded conflict as the API shows it.
type ConflictJSON struct {
	db.Conflict
	At string `json:"at"`
}

// ChunkList is a page of a backfill's chunk runs.
type ChunkList struct {
	Chunks     []ChunkJSON `json:"chunks"`
	NextCursor string      `json:"next_cursor"` // "" on the last page
}

// APIBackfillChunks lists a backfill's planned chunk runs (?state=&cursor=&limit=).
func (h *Handler) APIBackfillChunks(c echo.Context) error {
	ctx := c.Request().Context()
	if _, err := h.Store.Backfill(ctx, c.Param("id")); err != nil {
		return engineErr(err)
	}
	limit, err := pageLimit(c, 100, 1000)
	if err != nil {
		return err
	}
	runStates := []string{db.RunQueued, db.RunRunning, db.RunSucceeded, db.RunFailed, db.RunCanceled}
	states, err := stateParam(c, "state", "run state", runStates, strings.ToLower)
	if err != nil {
		return err
	}
	kind := "ch" + c.Param("id") // this backfill's chunks only
	after, err := cursorParam(c, -1, listCursorOf(kind, 0))
	if err != nil {
		return err
	}
	rows, err := h.Store.Runs(ctx, c.Param("id"), states, after, limit+1)
	if err != nil {
		return err
	}
	rows, next := pageOf(rows, limit, func(last db.Run) string { return encodeCursor(kind, last.Chunk) })
	out := ChunkList{Chunks: []ChunkJSON{}, NextCursor: next}
	for _, r := range rows {
		out.Chunks = append(out.Chunks, toChunkJSON(r))
	}
	return c.JSON(http.StatusOK, out)
}

// EventJSON is an event as the API shows it.
type EventJSON struct {
	ID      int64           `json:"id"`
	Type    string          `json:"type"`
	Subject string          `json:"subject"`
	Actor   string          `json:"actor"`
	At      string          `json:"at"`
	Summary string          `json:"summary"`
	Payload json.RawMessage `json:"payload"`
}

// MaxEventPayload is the largest payload the events API answers; a bigger
// one (an attempts event of a big backfill) reads {"truncated": true}.
const MaxEventPayload = 64 << 10

// APIBackfillEvents lists a backfill's events, newest first.
func (h *Handler) APIBackfillEvents(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	if _, err := h.Store.Backfill(ctx, id); err != nil {
		return engineErr(err)
	}
	kind := "ev" + id // this backfill's events only
	before, limit, err := listPage(c, limitUpTo(100, 1000), 0, cursorOf(kind))
	if err != nil {
		return err
	}
	evs, err := h.Store.EventsBySubjectCapped(ctx, "backfill:"+id, before, limit+1, MaxEventPayload)
	if err != nil {
		return err
	}
	evs, next := pageOf(evs, limit, func(last db.CappedEvent) string { return encodeCursor(kind, last.ID) })
	heads := make([]db.Event, len(evs))
	for i, e := range evs {
		heads[i] = e.Event
	}
	texts, err := h.eventTexts.summarize(ctx, h.Store, heads)
	if err != nil {
		return err
	}
	out := make([]EventJSON, 0, len(evs))
	for i, e := range evs {
		p := json.RawMessage(`{"truncated":true}`)
		if !e.Big {
			p = publicPayload([]byte(e.Payload))
		}
		out = append(out, EventJSON{ID: e.ID, Type: e.Type, Subject: e.Subject, Actor: e.Actor, At: msTime(e.At), Summary: texts[i], Payload: p})
	}
	return c.JSON(http.StatusOK, map[string]any{"events": out, "next_cursor": next})
}

// transitionBody is the body of a cancel; steerBody that of a pause or a
// resume, which take no terminate (a body naming it is refused as naming a
// field they do not take).
type transitionBody struct {
	ExpectedStateVersion *int64 `json:"expected_state_version"`
	Terminate            bool   `json:"terminate"`
}

type steerBody struct {
	ExpectedStateVersion *int64 `json:"expected_state_version"`
}

// expectedVersion is an optional expected_state_version: absent is 0 (no
// check); present, it must be a state_version (1 or more).
func expectedVersion(v *int64) (int64, error) {
	if v == nil {
		return 0, nil
	}
	if *v < 1 {
		return 0, withHint(BadRequest("expected_state_version", ""), fmt.Sprintf("expected_state_version must be a positive number, got %d", *v), HintExpectedVersion, nil)
	}
	return *v, nil
}

// engineAnd is the engine and the request's JSON body (decoded strictly,
// empty allowed) of an action on a backfill or a run.
func engineAnd[T any](h *Handler, c echo.Context) (*jobs.Engine, T, error) {
	var body T
	eng, err := h.engine()
	if err == nil {
		err = decodeStrict(c, &body, true)
	}
	return eng, body, err
}

func (h *Handler) transition(c echo.Context, action string) error {
	var eng *jobs.Engine
	var body transitionBody
	var err error
	if action == jobs.ActCancel {
		eng, body, err = engineAnd[transitionBody](h, c)
	} else {
		var sb steerBody
		eng, sb, err = engineAnd[steerBody](h, c)
		body.ExpectedStateVersion = sb.ExpectedStateVersion
	}
	if err != nil {
		return err
	}
	expected, err := expectedVersion(body.ExpectedStateVersion)
	if err != nil {
		return err
	}
	b, err := eng.Transition(c.Request().Context(), c.Param("id"), action, expected, body.Terminate, Actor(c))
	if err != nil {
		return engineErr(err)
	}
	return c.JSON(http.StatusOK, ToBackfillJSON(b))
}

// APIBackfillPause stops planning new chunks; active runs finish.
func (h *Handler) APIBackfillPause(c echo.Context) error { return h.transition(c, jobs.ActPause) }

// APIBackfillResume resumes a paused backfill.
func (h *Handler) APIBackfillResume(c echo.Context) error { return h.transition(c, jobs.ActResume) }

// APIBackfillCancel cancels a backfill ({"terminate": true} kills active runs).
func (h *Handler) APIBackfillCancel(c echo.Context) error { return h.transition(c, jobs.ActCancel) }

type retryBody struct {
	RetryRequestID       *string `json:"retry_request_id"`
	ChunkSize            *int64  `json:"chunk_size"`
	MaxConcurrentRuns    *int64  `json:"max_concurrent_runs"`
	ExpectedStateVersion *int64  `json:"expected_state_version"`
}

// APIBackfillRetryFailed creates a child backfill of the failed partitions.
func (h *Handler) APIBackfillRetryFailed(c echo.Context) error {
	eng, body, err := engineAnd[retryBody](h, c)
	if err != nil {
		return err
	}
	// The request id comes from the body or the Idempotency-Key header: one
	// of them, or both the same.
	reqID, err := idempotencyKey(c)
	if err != nil {
		return err
	}
	if r := body.RetryRequestID; r != nil {
		switch {
		case *r == "":
			return BadRequest("retry_request_id", "retry_request_id is empty; give an id (the same id returns the same child backfill) or leave it out")
		case reqID != "" && reqID != *r:
			return BadRequest("retry_request_id", "retry_request_id %q and the Idempotency-Key header %q differ; send one of them, or both the same", *r, reqID)
		}
		reqID = *r
	}
	opts := jobs.RetryOptions{RequestID: reqID}
	// Absent settings take the parent's; present ones must be valid.
	if v := body.ChunkSize; v != nil {
		if *v < 1 || *v > jobs.MaxChunkSize {
			return BadRequest("chunk_size", "chunk_size must be between 1 and %d, got %d; leave it out to keep the parent's", jobs.MaxChunkSize, *v)
		}
		opts.ChunkSize = *v
	}
	if v := body.MaxConcurrentRuns; v != nil {
		if *v < 1 || *v > jobs.MaxConcurrentRunsCap {
			return BadRequest("max_concurrent_runs", "max_concurrent_runs must be between 1 and %d, got %d; leave it out to keep the parent's", jobs.MaxConcurrentRunsCap, *v)
		}
		opts.MaxConcurrentRuns = *v
	}
	if opts.ExpectedStateVersion, err = expectedVersion(body.ExpectedStateVersion); err != nil {
		return err
	}
	res, err := eng.RetryFailed(c.Request().Context(), c.Param("id"), opts, Actor(c))
	if err != nil {
		return engineErr(err)
	}
	return createdBackfill(c, res)
}

// RunJSON is a run with its attempts and the log tail of the latest one.
type RunJSON struct {
	ChunkJSON
	AttemptList []AttemptJSON `json:"attempt_list"`
	// PartitionList is the run's first partitions (up to RunAPIPartitions),
	// in chunk order, with what the run did to each.
	PartitionList []jobs.PartitionOutcome `json:"partition_list"`
	LogTail       string                  `json:"log_tail"`
	// Waiting says why a queued run has not started (absent otherwise).
	Waiting *jobs.RunWait `json:"waiting,omitempty"`
}

// RunAPIPartitions is how many partitions GET /api/v1/runs/{id} lists.
const RunAPIPartitions = 1000

// APIRunGet shows a run, its attempts and its latest log (or attempt N's
// with ?attempt=N).
func (h *Handler) APIRunGet(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := h.Store.Run(ctx, c.Param("id"))
	if err != nil {
		return engineErr(err)
	}
	atts, err := h.Store.Attempts(ctx, r.ID)
	if err != nil {
		return err
	}
	out := RunJSON{ChunkJSON: toChunkJSON(r), AttemptList: []AttemptJSON{}, PartitionList: []jobs.PartitionOutcome{}}
	for _, a := range atts {
		out.AttemptList = append(out.AttemptList, AttemptJSON{Attempt: a, StartedAt: msTime(a.StartedAt), FinishedAt: msTimePtr(a.FinishedAt)})
	}
	if eng, err := h.engine(); err == nil {
		if out.PartitionList, _, err = eng.RunPartitions(ctx, r, RunAPIPartitions); err != nil {
			return err
		}
		if r.State == db.RunQueued {
			b, err := h.Store.Backfill(ctx, r.BackfillID)
			if err != nil {
				return err
			}
			if out.Waiting, err = eng.WaitReason(ctx, b, r); err != nil {
				return err
			}
		}
	}
	pick := len(atts) - 1
	if len(atts) > 0 {
		if pick, err = logAttempt(c, atts); err != nil {
			return err
		}
		if out.LogTail, err = h.Store.AttemptLog(ctx, r.ID, atts[pick].Attempt); err != nil {
			return err
		}
	}
	if eng, err := h.engine(); err == nil && r.State == db.RunRunning && pick == len(atts)-1 {
		// The attempt under way: its output so far.
		if live, ok := eng.LiveLog(r.ID); ok {
			out.LogTail = live
		}
	}
	return c.JSON(http.StatusOK, out)
}

type completeBody struct {
	Results []jobs.PartResult `json:"results"`
	Error   string            `json:"error"`
}

// APIRunComplete records the result of an asynchronous (http 202) attempt.
func (h *Handler) APIRunComplete(c echo.Context) error {
	eng, body, err := engineAnd[completeBody](h, c)
	if err != nil {
		return err
	}
	first := map[string]int{}
	for i, r := range body.Results {
		if j, ok := first[r.Partition]; ok {
			return BadRequest(fmt.Sprintf("results[%d].partition", i), "partition %q is reported twice (results[%d] and results[%d]); send one result per partition", r.Partition, j, i)
		}
		first[r.Partition] = i
	}
	if err := eng.Complete(c.Request().Context(), c.Param("id"), body.Results, body.Error); err != nil {
		return engineErr(err)
	}
	return c.JSON(http.StatusAccepted, map[string]any{"run_id": c.Param("id"), "accepted": true})
}

// APIConflicts lists run keys requested again with different partitions.
func (h *Handler) APIConflicts(c echo.Context) error {
	before, limit, err := listPage(c, limitUpTo(100, 1000), 0, cursorOf("cf"))
	if err != nil {
		return err
	}
	cs, err := h.Store.ConflictsBefore(c.Request().Context(), before, limit+1)
	if err != nil {
		return err
	}
	cs, next := pageOf(cs, limit, func(last db.Conflict) string { return encodeCursor("cf", last.ID) })
	out := make([]ConflictJSON, 0, len(cs))
	for _, cf := range cs {
		out = append(out, ConflictJSON{Conflict: cf, At: msTime(cf.At)})
	}
	return c.JSON(http.StatusOK, map[string]any{"conflicts": out, "next_cursor": next})
}
