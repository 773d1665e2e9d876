package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
)

// SensorJSON is a sensor as the API shows it: its definition from the
// workspace and its state from the store.
type SensorJSON struct {
	Name              string           `json:"name"`
	Kind              string           `json:"kind"` // push or poll
	Assets            []string         `json:"assets"`
	Evaluator         *SensorEvaluator `json:"evaluator"` // null for a push sensor
	ChunkSize         int64            `json:"chunk_size"`
	MaxConcurrentRuns int64            `json:"max_concurrent_runs"`
	Priority          int64            `json:"priority"`
	Enabled           bool             `json:"enabled"`
	Retention         string           `json:"retention"` // evaluations and events older are pruned, counted in state.pruned_* (serve --automation-retention)
	State             SensorStateJSON  `json:"state"`
	LastEvent         *SensorEventJSON `json:"last_event"` // the newest pushed event (null: none)
}

// SensorEvaluator is a poll sensor's evaluator: what it is (its command,
// URL, headers and environment are not shown: they may hold secrets), how
// often it is called and how long it may take.
type SensorEvaluator struct {
	Kind     string `json:"kind"`     // command or http
	Interval string `json:"interval"` // e.g. 30s
	Timeout  string `json:"timeout"`
}

// SensorStateJSON is what evaluations, events and operators did with a
// sensor.
type SensorStateJSON struct {
	Paused           bool    `json:"paused"`
	PausedBy         *string `json:"paused_by"`
	PausedAt         *string `json:"paused_at"`
	Status           string  `json:"status"` // ok or error
	LastError        *string `json:"last_error"`
	Failures         int64   `json:"failures"` // failed evaluations in a row
	Cursor           *string `json:"cursor"`
	StateVersion     int64   `json:"state_version"`
	LastEvaluatedAt  *string `json:"last_evaluated_at"`
	NextEvaluationAt *string `json:"next_evaluation_at"`
	EventsAccepted   int64   `json:"events_accepted"`
	Launches         int64   `json:"launches"`
	Evaluations      int64   `json:"evaluations"`
	// Pruned: evaluations and events older than the retention, deleted (the
	// counts above keep them; a pruned event's message id still answers as
	// a duplicate).
	PrunedEvaluations int64 `json:"pruned_evaluations"`
	PrunedEvents      int64 `json:"pruned_events"`
}

// SensorEventJSON is a pushed event's first outcome.
type SensorEventJSON struct {
	Sensor     string  `json:"sensor"`
	MessageID  string  `json:"message_id"`
	ReceivedAt string  `json:"received_at"`
	Outcome    string  `json:"outcome"`
	Reason     *string `json:"reason"`
	BackfillID *string `json:"backfill_id"`
	Actor      string  `json:"actor"`
	Pruned     bool    `json:"pruned,omitempty"` // older than the retention: only its message id and first outcome are kept (no reason, no actor)
}

// SensorEvaluationJSON is one recorded evaluation, dry run or cursor reset.
type SensorEvaluationJSON struct {
	ID           int64           `json:"id"`
	Sensor       string          `json:"sensor"`
	Kind         string          `json:"kind"` // evaluation, dry_run or reset
	StartedAt    string          `json:"started_at"`
	DurationMs   int64           `json:"duration_ms"`
	CursorBefore *string         `json:"cursor_before"`
	CursorAfter  *string         `json:"cursor_after"`
	Requests     json.RawMessage `json:"requests"` // the run requests with their outcome (backfill, skipped, preview)
	SkipReason   *string         `json:"skip_reason"`
	Error        *string         `json:"error"`
	LogTail      *string         `json:"log_tail"`
	Actor        string          `json:"actor"`
}

// SensorRunKeyJSON is a run key a sensor launched.
type SensorRunKeyJSON struct {
	RunKey     string `json:"run_key"`
	BackfillID string `json:"backfill_id"`
	CreatedAt  string `json:"created_at"`
}

// Sensor kinds as the API and the pages name them.
const (
	SensorPush = "push"
	SensorPoll = "poll"
)

// Page sizes of a sensor's lists (?limit= up to MaxPageLimit).
const (
	DefaultSensorPageLimit = 100
	// MaxSensorCursor bounds a cursor an admin sets.
	MaxSensorCursor = 64 << 10
)

func (h *Handler) sensors() (*jobs.Sensors, error) {
	if h.Sensors == nil || h.Engine == nil {
		return nil, &UserError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "sensors do not run on this server"}
	}
	return h.Sensors, nil
}

// routeSensor is the sensors and the sensor of the route's :name (503 when
// sensors do not run, else 404 when the workspace does not declare it).
func (h *Handler) routeSensor(c echo.Context) (*jobs.Sensors, *catalog.Sensor, error) {
	return engineAndDeclared(h.sensors, func() (*catalog.Sensor, error) { return h.workspaceSensor(c) })
}

// sensorNotFound is the 404 of a sensor the workspace does not declare: it
// names the known ones.
func sensorNotFound(name, known string) *UserError {
	return unknownNamed("sensor", name, known, HintSensorList)
}

// workspaceSensor resolves the :name of a sensor route.
func (h *Handler) workspaceSensor(c echo.Context) (*catalog.Sensor, error) {
	ws := h.Workspace().Workspace
	return declared(c, "sensor", HintSensorList, ws.Sensor, ws.SensorNames)
}

// pushFields are the push body's names of the fields of the backfill
// request an event becomes.
var pushFields = map[string]string{"selector": "partitions", "selector.keys": "partitions", "selector.start": "start", "selector.end": "end"}

// sensorErr words the sensor engine's refusals; anything else as engineErr.
func sensorErr(err error) error {
	var ie *jobs.InputError
	if !errors.As(err, &ie) {
		return engineErr(err)
	}
	switch ie.Code {
	case jobs.CodeUnknownSensor:
		return sensorNotFound(ie.Params["sensor"], ie.Params["known"])
	case jobs.CodeSensorPaused, jobs.CodeSensorState, jobs.CodeNotPollSensor, jobs.CodeNotPushSensor:
		ue := Conflict("")
		ue.Field = ie.Field
		p := map[string]string{"sensor": ie.Params["sensor"], "state": ie.Params["state"], "code": ie.Code}
		return withHint(ue, ie.Msg, HintSensorState, p)
	}
	uerr := engineErr(err)
	var ue *UserError
	if errors.As(uerr, &ue) {
		field, idx, _ := strings.Cut(ue.Field, "[")
		if f, ok := pushFields[field]; ok {
			ue.Field = f
			if idx != "" {
				ue.Field += "[" + idx
			}
		}
	}
	return uerr
}

// sensorView is one sensor with its state and newest event or
// evaluation.
type sensorView struct {
	Def       *catalog.Sensor
	State     db.SensorState // zero before anything happened to it
	LastEvent *db.SensorEvent
	LastEval  *db.SensorEvaluation // poll sensors
	// The newest events (push) or evaluations (poll), newest first, when
	// sensorViews was asked for more than the last one.
	RecentEvents []db.SensorEvent
	RecentEvals  []db.SensorEvaluation
}

// sensorViews reads defs' states and their newest event or evaluation
// (recent of them, at least 1), in three queries however many sensors.
func (h *Handler) sensorViews(ctx context.Context, defs []*catalog.Sensor, recent int) ([]sensorView, error) {
	recent = max(recent, 1)
	byName, err := h.Store.SensorStates(ctx)
	if err != nil {
		return nil, err
	}
	// One query for the push sensors' newest events, one for the poll
	// sensors' newest evaluations, however many sensors.
	var push, poll []string
	for _, s := range defs {
		if s.Poll() {
			poll = append(poll, s.Name)
		} else {
			push = append(push, s.Name)
		}
	}
	events, evals := map[string][]db.SensorEvent{}, map[string][]db.SensorEvaluation{}
	if len(push) > 0 {
		if events, err = h.Store.RecentSensorEvents(ctx, push, recent); err != nil {
			return nil, err
		}
	}
	if len(poll) > 0 {
		if evals, err = h.Store.RecentSensorEvaluations(ctx, poll, recent); err != nil {
			return nil, err
		}
	}
	out := make([]sensorView, 0, len(defs))
	for _, s := range defs {
		v := sensorView{Def: s, State: byName[s.Name]}
		if v.State.Status == "" {
			v.State.Status = db.SensorOK
		}
		if es := events[s.Name]; len(es) > 0 && !s.Poll() {
			v.LastEvent, v.RecentEvents = &es[0], es
		}
		if es := evals[s.Name]; len(es) > 0 && s.Poll() {
			v.LastEval, v.RecentEvals = &es[0], es
		}
		out = append(out, v)
	}
	return out, nil
}

func sensorKind(s *catalog.Sensor) string {
	if s.Poll() {
		return SensorPoll
	}
	return SensorPush
}

func (v sensorView) json(retention time.Duration) SensorJSON {
	s, st := v.Def, v.State
	out := SensorJSON{Retention: catalog.FormatDuration(retention), Name: s.Name, Kind: sensorKind(s), Assets: s.Assets, Priority: s.Priority, Enabled: s.Enabled}
	out.ChunkSize, out.MaxConcurrentRuns = jobs.LaunchDefaults(s.ChunkSize, s.MaxConcurrent)
	if s.Poll() {
		out.Evaluator = &SensorEvaluator{Kind: s.Evaluator.Kind, Interval: catalog.FormatDuration(s.Interval), Timeout: catalog.FormatDuration(s.Timeout)}
	}
	out.State = SensorStateJSON{Paused: st.Paused, PausedBy: st.PausedBy, PausedAt: msTimePtr(st.PausedAt), Status: st.Status, LastError: st.LastError,
		Failures: st.Failures, Cursor: st.Cursor, StateVersion: st.StateVersion, LastEvaluatedAt: msTimePtr(st.LastEvaluatedAt),
		NextEvaluationAt: msTimePtr(st.NextEvaluationAt), EventsAccepted: st.EventsAccepted, Launches: st.Launches, Evaluations: st.Evaluations,
		PrunedEvaluations: st.PrunedEvaluations, PrunedEvents: st.PrunedEvents}
	if v.LastEvent != nil {
		ev := toSensorEventJSON(*v.LastEvent)
		out.LastEvent = &ev
	}
	return out
}

func toSensorEventJSON(e db.SensorEvent) SensorEventJSON {
	return SensorEventJSON{Sensor: e.Sensor, MessageID: e.MessageID, ReceivedAt: msTime(e.ReceivedAt), Outcome: e.Outcome, Reason: e.Reason,
		BackfillID: e.BackfillID, Actor: e.Actor, Pruned: e.Pruned}
}

func toSensorEvaluationJSON(e db.SensorEvaluation) SensorEvaluationJSON {
	req := json.RawMessage("[]")
	if outs, err := jobs.ReadOutcomes(e.Requests); err == nil && len(outs) > 0 {
		// A dry run's previews with their estimate in words, as the
		// evaluate answer words them (the store keeps the basis).
		for _, o := range outs {
			wordEstimate(o.Preview)
		}
		if b, err := json.Marshal(outs); err == nil {
			req = b
		}
	}
	return SensorEvaluationJSON{ID: e.ID, Sensor: e.Sensor, Kind: e.Kind, StartedAt: msTime(e.StartedAt), DurationMs: e.DurationMs,
		CursorBefore: e.CursorBefore, CursorAfter: e.CursorAfter, Requests: req, SkipReason: e.SkipReason, Error: e.Error, LogTail: e.LogTail, Actor: e.Actor}
}

// SensorList is every sensor of the workspace.
type SensorList struct {
	Sensors []SensorJSON `json:"sensors"`
}

// APISensorList lists the workspace's sensors in the order it declares them.
func (h *Handler) APISensorList(c echo.Context) error {
	vs, err := h.sensorViews(c.Request().Context(), h.Workspace().Workspace.Sensors, 1)
	if err != nil {
		return err
	}
	out := SensorList{Sensors: []SensorJSON{}}
	for _, v := range vs {
		out.Sensors = append(out.Sensors, v.json(h.automationRetention()))
	}
	return c.JSON(http.StatusOK, out)
}

// APISensorGet shows one sensor.
func (h *Handler) APISensorGet(c echo.Context) error {
	s, err := h.workspaceSensor(c)
	if err != nil {
		return err
	}
	return h.answerSensor(c, s)
}

func (h *Handler) answerSensor(c echo.Context, s *catalog.Sensor) error {
	vs, err := h.sensorViews(c.Request().Context(), []*catalog.Sensor{s}, 1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, vs[0].json(h.automationRetention()))
}

// evaluationsPage reads a page of s's evaluations (?cursor=&limit=).
func (h *Handler) evaluationsPage(c echo.Context, s *catalog.Sensor, defLimit int) ([]db.SensorEvaluation, string, error) {
	before, limit, err := listPage(c, limitUpTo(defLimit, MaxPageLimit), 0, cursorOf("se"))
	if err != nil {
		return nil, "", err
	}
	rows, err := h.Store.SensorEvaluations(c.Request().Context(), s.Name, before, limit+1)
	if err != nil {
		return nil, "", err
	}
	rows, next := pageOf(rows, limit, func(last db.SensorEvaluation) string { return encodeCursor("se", last.ID) })
	return rows, next, nil
}

// APISensorEvaluations lists a sensor's evaluations, dry runs and cursor
// resets, newest first (?cursor=&limit=).
func (h *Handler) APISensorEvaluations(c echo.Context) error {
	return sensorList(h, c, "evaluations", "next_cursor", h.evaluationsPage, toSensorEvaluationJSON)
}

// sensorList answers a list of the rows of the route's sensor: page reads
// a page of them (DefaultSensorPageLimit unless ?limit= says), toJSON
// shows one; they answer as field, beside the next page's position as
// nextKey.
func sensorList[R, J any](h *Handler, c echo.Context, field, nextKey string, page func(echo.Context, *catalog.Sensor, int) ([]R, string, error), toJSON func(R) J) error {
	s, err := h.workspaceSensor(c)
	if err != nil {
		return err
	}
	rows, next, err := page(c, s, DefaultSensorPageLimit)
	if err != nil {
		return err
	}
	out := make([]J, 0, len(rows))
	for _, r := range rows {
		out = append(out, toJSON(r))
	}
	return c.JSON(http.StatusOK, map[string]any{"sensor": s.Name, field: out, nextKey: next})
}

// eventsPage reads a page of s's pushed events (?cursor=&limit=).
func (h *Handler) eventsPage(c echo.Context, s *catalog.Sensor, defLimit int) ([]db.SensorEvent, string, error) {
	before, limit, err := listPage(c, limitUpTo(defLimit, MaxPageLimit), nil, func(v string) (*db.SensorEventCursor, error) {
		at, id, err := decodeAtCursor(v, "sv")
		return &db.SensorEventCursor{ReceivedAt: at, MessageID: id}, err
	})
	if err != nil {
		return nil, "", err
	}
	rows, err := h.Store.SensorEvents(c.Request().Context(), s.Name, before, limit+1)
	if err != nil {
		return nil, "", err
	}
	rows, next := pageOf(rows, limit, func(last db.SensorEvent) string { return encodeAtCursor("sv", last.ReceivedAt, last.MessageID) })
	return rows, next, nil
}

// APISensorEvents lists the events pushed to a sensor, newest first
// (?cursor=&limit=).
func (h *Handler) APISensorEvents(c echo.Context) error {
	return sensorList(h, c, "events", "next_cursor", h.eventsPage, toSensorEventJSON)
}

// runKeysPage reads the run keys of s that start with ?prefix=, after
// ?after= (in key order).
func (h *Handler) runKeysPage(c echo.Context, s *catalog.Sensor, defLimit int) ([]db.SensorRunKey, string, error) {
	limit, err := pageLimit(c, defLimit, MaxPageLimit)
	if err != nil {
		return nil, "", err
	}
	prefix, after := c.QueryParam("prefix"), c.QueryParam("after")
	for name, v := range map[string]string{"prefix": prefix, "after": after} {
		if len(v) > catalog.MaxMessageIDLen {
			return nil, "", BadRequest(name, "%s is %d bytes long; a run key has at most %d", name, len(v), catalog.MaxMessageIDLen)
		}
	}
	rows, err := h.Store.SensorRunKeys(c.Request().Context(), s.Name, prefix, after, limit+1)
	if err != nil {
		return nil, "", err
	}
	rows, next := pageOf(rows, limit, func(last db.SensorRunKey) string { return last.RunKey })
	return rows, next, nil
}

// APISensorRunKeys lists the run keys a sensor launched, in key order
// (?prefix= those that start so, ?after= the page after that key).
func (h *Handler) APISensorRunKeys(c echo.Context) error {
	return sensorList(h, c, "run_keys", "next_after", h.runKeysPage, func(k db.SensorRunKey) SensorRunKeyJSON {
		return SensorRunKeyJSON{RunKey: k.RunKey, BackfillID: k.BackfillID, CreatedAt: msTime(k.CreatedAt)}
	})
}

// PushResult is what a pushed event did: its first outcome, whether this
// answer repeats it, and the backfill it launched.
type PushResult struct {
	Event    SensorEventJSON `json:"event"`
	Replayed bool            `json:"replayed"`
	Backfill *BackfillJSON   `json:"backfill"`
}

// APISensorPush records an event pushed to a sensor: 201 with the backfill
// it launched, or 200 with the first outcome when its message_id was sent
// before (nothing launches twice).
func (h *Handler) APISensorPush(c echo.Context) error {
	eng, s, err := engineAndDeclared(h.engine, func() (*catalog.Sensor, error) { return h.workspaceSensor(c) })
	if err != nil {
		return err
	}
	var ev jobs.PushEvent
	body, err := readBody(c)
	if err != nil {
		return err
	}
	if err := decodeStrictBody(body, &ev, false); err != nil {
		return err
	}
	if err := emptyRangeBound(body, ""); err != nil {
		return err
	}
	if ev.Assets != nil && len(ev.Assets) == 0 {
		// Sent empty, not left out: a client's filter that came out empty
		// must not launch a backfill of every asset of the sensor.
		return BadRequest("assets", "assets lists no asset: name some of sensor %s's assets, or leave assets out for all of them (%s)", s.Name, strings.Join(s.Assets, ", "))
	}
	r, err := eng.Push(c.Request().Context(), s.Name, ev, Actor(c))
	if err != nil {
		return sensorErr(err)
	}
	out := PushResult{Event: toSensorEventJSON(r.Event), Replayed: r.Replayed}
	if id := r.Event.BackfillID; id != nil {
		b := r.Backfill // as created, or read: the answer repeats the first outcome
		if b == nil || b.ID != *id {
			read, err := h.Store.Backfill(c.Request().Context(), *id)
			if err != nil {
				return err
			}
			b = &read
		}
		bj := ToBackfillJSON(*b)
		out.Backfill = &bj
		c.Response().Header().Set(echo.HeaderLocation, "/api/v1/backfills/"+url.PathEscape(*id))
	}
	status := http.StatusCreated
	if r.Replayed {
		status = http.StatusOK
	}
	return c.JSON(status, out)
}

type evaluateBody struct {
	DryRun bool `json:"dry_run"`
}

// EvaluationResult is an evaluation as it was recorded, with each run
// request's outcome.
type EvaluationResult struct {
	Evaluation SensorEvaluationJSON  `json:"evaluation"`
	Requests   []jobs.RequestOutcome `json:"requests"`
}

// APISensorEvaluate evaluates a poll sensor now ({"dry_run": true}: shows
// what it would request, launching nothing and keeping the cursor).
func (h *Handler) APISensorEvaluate(c echo.Context) error {
	sn, s, err := h.routeSensor(c)
	if err != nil {
		return err
	}
	var body evaluateBody
	if err := decodeStrict(c, &body, true); err != nil {
		return err
	}
	ev, err := sn.Evaluate(c.Request().Context(), s.Name, body.DryRun, Actor(c))
	if err != nil {
		return sensorErr(err)
	}
	return c.JSON(http.StatusOK, evaluationResult(ev))
}

func evaluationResult(ev jobs.Evaluation) EvaluationResult {
	out := EvaluationResult{Evaluation: toSensorEvaluationJSON(ev.Record), Requests: ev.Outcomes}
	for _, o := range out.Requests {
		wordEstimate(o.Preview)
	}
	if out.Requests == nil {
		out.Requests = []jobs.RequestOutcome{}
	}
	return out
}

// APISensorPause pauses a sensor: it is not evaluated, and pushed events
// are refused (409) until it is resumed.
func (h *Handler) APISensorPause(c echo.Context) error { return h.apiSensorPaused(c, true) }

// APISensorResume resumes a paused sensor.
func (h *Handler) APISensorResume(c echo.Context) error { return h.apiSensorPaused(c, false) }

func (h *Handler) apiSensorPaused(c echo.Context, paused bool) error {
	sn, s, err := h.routeSensor(c)
	if err != nil {
		return err
	}
	return apiSetPaused(c, func(ctx context.Context) error {
		if _, err := sn.SetPaused(ctx, s.Name, paused, Actor(c)); err != nil {
			return sensorErr(err)
		}
		return nil
	}, func() error { return h.answerSensor(c, s) })
}

type cursorBody struct {
	Cursor json.RawMessage `json:"cursor"`
}

// parseCursorBody reads {"cursor": "..."} or {"cursor": null}.
func parseCursorBody(c echo.Context) (*string, error) {
	var body cursorBody
	if err := decodeStrict(c, &body, false); err != nil {
		return nil, err
	}
	if body.Cursor == nil {
		return nil, BadRequest("cursor", `cursor is required: send {"cursor": "VALUE"} to set it, or {"cursor": null} to clear it`)
	}
	if string(body.Cursor) == "null" {
		return nil, nil
	}
	var v string
	if err := json.Unmarshal(body.Cursor, &v); err != nil {
		return nil, BadRequest("cursor", `cursor must be a string (the evaluator reads it as text), or null to clear it; got %s`, strings.TrimSpace(string(body.Cursor)))
	}
	if len(v) > MaxSensorCursor {
		return nil, BadRequest("cursor", "cursor is %d bytes long; at most %d", len(v), MaxSensorCursor)
	}
	return &v, nil
}

// APISensorCursor sets a sensor's cursor (admin): {"cursor": "VALUE"} or
// {"cursor": null}; recorded as an evaluation of kind reset with who did
// it, and an evaluation in flight then launches nothing.
func (h *Handler) APISensorCursor(c echo.Context) error {
	sn, s, err := h.routeSensor(c)
	if err != nil {
		return err
	}
	cur, err := parseCursorBody(c)
	if err != nil {
		return err
	}
	if _, err := sn.ResetCursor(c.Request().Context(), s.Name, cur, Actor(c)); err != nil {
		return sensorErr(err)
	}
	return h.answerSensor(c, s)
}
