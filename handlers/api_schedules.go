package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
)

// NextTicksShown is how many upcoming ticks a schedule lists.
const NextTicksShown = 5

// ScheduleJSON is a schedule as the API shows it: its definition from the
// workspace, its state from the store, and its next ticks.
type ScheduleJSON struct {
	Name              string             `json:"name"`
	Cron              string             `json:"cron"`
	Timezone          string             `json:"timezone"`
	Assets            []string           `json:"assets"`
	Target            string             `json:"target"`
	MissingWithin     string             `json:"missing_within,omitempty"`
	ChunkSize         int64              `json:"chunk_size"`
	MaxConcurrentRuns int64              `json:"max_concurrent_runs"`
	Priority          int64              `json:"priority"`
	Overlap           string             `json:"overlap"`
	Catchup           ScheduleCatchup    `json:"catchup"`
	Enabled           bool               `json:"enabled"`
	DefinitionHash    string             `json:"definition_hash"`
	Retention         string             `json:"retention"` // ticks evaluated longer ago are pruned, counted in state.pruned_ticks (serve --automation-retention)
	State             ScheduleStateJSON  `json:"state"`
	LastTick          *TickJSON          `json:"last_tick"`
	NextTicks         []ScheduleNextTick `json:"next_ticks"`
}

// ScheduleCatchup is a schedule's catch-up bounds.
type ScheduleCatchup struct {
	Window   string `json:"window"`
	MaxTicks int    `json:"max_ticks"`
}

// ScheduleStateJSON is what the scheduler and the operators did with a
// schedule.
type ScheduleStateJSON struct {
	Paused         bool    `json:"paused"`
	PausedBy       *string `json:"paused_by"`
	PausedAt       *string `json:"paused_at"`
	EvaluatedUntil *string `json:"evaluated_until"` // every scheduled tick up to this instant has been evaluated (null: the scheduler has not seen the schedule yet)
	LastBackfillID *string `json:"last_backfill_id"`
	TicksLaunched  int64   `json:"ticks_launched"`
	TicksSkipped   int64   `json:"ticks_skipped"`
	TicksFailed    int64   `json:"ticks_failed"`
	PrunedTicks    int64   `json:"pruned_ticks"` // ticks older than the retention, deleted (the counts above keep them)
	StateVersion   int64   `json:"state_version"`
}

// ScheduleNextTick is an upcoming tick, in UTC and in the schedule's zone.
type ScheduleNextTick struct {
	At    string `json:"at"`    // UTC, as every API time
	Local string `json:"local"` // RFC 3339 with the zone's offset
	Zone  string `json:"zone"`  // the zone's abbreviation then (CET, CEST, EST, ...)
}

// TickJSON is one evaluated tick.
type TickJSON struct {
	ID                string  `json:"id"`
	Schedule          string  `json:"schedule"`
	ScheduledFor      string  `json:"scheduled_for"`
	ScheduledForLocal string  `json:"scheduled_for_local"`
	EvaluatedAt       string  `json:"evaluated_at"`
	Outcome           string  `json:"outcome"`
	Reason            *string `json:"reason"`
	DefinitionHash    string  `json:"definition_hash"`
	BackfillID        *string `json:"backfill_id"`
	Manual            bool    `json:"manual"`
	Actor             string  `json:"actor"`
}

// TickOutcomes are the outcomes a tick can have (the ?outcome= filter).
var TickOutcomes = []string{db.TickLaunched, db.TickQueued, db.TickSkipped, db.TickFailed}

// Tick pages: DefaultTickPageLimit ticks unless ?limit= says otherwise, at
// most MaxPageLimit (as every list but the backfills').
const DefaultTickPageLimit = 100

func (h *Handler) scheduler() (*jobs.Scheduler, error) {
	if h.Scheduler == nil {
		return nil, &UserError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "the scheduler is not running on this server"}
	}
	return h.Scheduler, nil
}

// routeSchedule is the scheduler and the schedule of the route's :name
// (503 when no scheduler runs, else 404 when the workspace does not declare
// it).
func (h *Handler) routeSchedule(c echo.Context) (*jobs.Scheduler, *catalog.Schedule, error) {
	return engineAndDeclared(h.scheduler, func() (*catalog.Schedule, error) { return h.workspaceSchedule(c) })
}

// scheduleNotFound is the 404 of a schedule the workspace does not declare:
// it names the known ones.
func scheduleNotFound(name, known string) *UserError {
	return unknownNamed("schedule", name, known, HintScheduleList)
}

// workspaceSchedule resolves the :name of a schedule route.
func (h *Handler) workspaceSchedule(c echo.Context) (*catalog.Schedule, error) {
	ws := h.Workspace().Workspace
	return declared(c, "schedule", HintScheduleList, ws.Schedule, ws.ScheduleNames)
}

// scheduleErr words the scheduler's refusals; anything else as engineErr.
func scheduleErr(err error) error {
	var ie *jobs.InputError
	if !errors.As(err, &ie) {
		return engineErr(err)
	}
	switch ie.Code {
	case jobs.CodeUnknownSchedule:
		return scheduleNotFound(ie.Params["schedule"], ie.Params["known"])
	case jobs.CodeScheduleState:
		ue := Conflict("")
		ue.Field = ie.Field
		return withHint(ue, ie.Msg, HintScheduleState, ie.Params)
	}
	return engineErr(err)
}

// localTime writes t in loc as RFC 3339 with the offset.
func localTime(t time.Time, loc *time.Location) string {
	return t.In(loc).Format("2006-01-02T15:04:05.000Z07:00")
}

func timezoneOf(s *catalog.Schedule) string {
	if s.Timezone == "" {
		return "UTC"
	}
	return s.Timezone
}

// nextTicks are s's next n ticks after now (none while it is disabled).
func nextTicks(s *catalog.Schedule, now time.Time, n int) []ScheduleNextTick {
	out := []ScheduleNextTick{}
	if !s.Enabled {
		return out
	}
	loc := s.Cron.Location()
	for _, t := range s.Cron.NextN(now, n) {
		zone, _ := t.In(loc).Zone()
		out = append(out, ScheduleNextTick{At: apiTime(t), Local: localTime(t, loc), Zone: zone})
	}
	return out
}

func toTickJSON(t db.Tick, loc *time.Location) TickJSON {
	return TickJSON{ID: t.ID, Schedule: t.Schedule, ScheduledFor: msTime(t.ScheduledFor), ScheduledForLocal: localTime(db.FromMillis(t.ScheduledFor), loc),
		EvaluatedAt: msTime(t.EvaluatedAt), Outcome: t.Outcome, Reason: t.Reason, DefinitionHash: t.DefinitionHash,
		BackfillID: t.BackfillID, Manual: t.Manual, Actor: t.Actor}
}

// scheduleView is one schedule with its state and newest ticks, as the
// API and the pages read it.
type scheduleView struct {
	Def      *catalog.Schedule
	State    db.ScheduleState // zero (Seen false) before the scheduler first saw it
	Seen     bool
	LastTick *db.Tick
	Recent   []db.Tick // the newest ticks, newest first (as many as asked)
}

// scheduleViews reads the state and the newest recent ticks (at least 1)
// of schedules: two queries, however many schedules.
func (h *Handler) scheduleViews(ctx context.Context, defs []*catalog.Schedule, recent int) ([]scheduleView, error) {
	byName, err := h.Store.ScheduleStates(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(defs))
	for i, s := range defs {
		names[i] = s.Name
	}
	ticks, err := h.Store.RecentTicks(ctx, names, max(recent, 1))
	if err != nil {
		return nil, err
	}
	out := make([]scheduleView, 0, len(defs))
	for _, s := range defs {
		v := scheduleView{Def: s, Recent: ticks[s.Name]}
		v.State, v.Seen = byName[s.Name]
		if len(v.Recent) > 0 {
			v.LastTick = &v.Recent[0]
		}
		out = append(out, v)
	}
	return out, nil
}

// automationRetention is how long ticks, evaluations and events are kept.
func (h *Handler) automationRetention() time.Duration {
	if h.Engine != nil {
		return h.Engine.AutomationRetention()
	}
	return jobs.DefaultAutomationRetention
}

func (v scheduleView) json(now time.Time, retention time.Duration) ScheduleJSON {
	s := v.Def
	out := ScheduleJSON{Retention: catalog.FormatDuration(retention), Name: s.Name, Cron: s.CronExpr, Timezone: timezoneOf(s), Assets: s.Assets, Target: s.Target,
		Priority: s.Priority, Overlap: s.Overlap,
		Catchup: ScheduleCatchup{Window: catalog.FormatDuration(s.Catchup.Window), MaxTicks: s.Catchup.MaxTicks}, Enabled: s.Enabled,
		DefinitionHash: s.Hash(), NextTicks: nextTicks(s, now, NextTicksShown)}
	out.ChunkSize, out.MaxConcurrentRuns = jobs.LaunchDefaults(s.ChunkSize, s.MaxConcurrent)
	if s.Target == catalog.TargetMissingWithin {
		out.MissingWithin = s.MissingWithin.String()
	}
	st := v.State
	out.State = ScheduleStateJSON{Paused: st.Paused, PausedBy: st.PausedBy, PausedAt: msTimePtr(st.PausedAt), LastBackfillID: st.LastBackfillID,
		TicksLaunched: st.TicksLaunched, TicksSkipped: st.TicksSkipped, TicksFailed: st.TicksFailed, PrunedTicks: st.PrunedTicks, StateVersion: st.StateVersion}
	if v.Seen {
		out.State.EvaluatedUntil = msTimePtr(&st.LastTickAt)
	}
	if v.LastTick != nil {
		t := toTickJSON(*v.LastTick, s.Cron.Location())
		out.LastTick = &t
	}
	return out
}

// ScheduleList is every schedule of the workspace.
type ScheduleList struct {
	Schedules []ScheduleJSON `json:"schedules"`
}

// APIScheduleList lists the workspace's schedules in the order it declares them.
func (h *Handler) APIScheduleList(c echo.Context) error {
	views, err := h.scheduleViews(c.Request().Context(), h.Workspace().Workspace.Schedules, 1)
	if err != nil {
		return err
	}
	now := h.Now()
	out := ScheduleList{Schedules: []ScheduleJSON{}}
	for _, v := range views {
		out.Schedules = append(out.Schedules, v.json(now, h.automationRetention()))
	}
	return c.JSON(http.StatusOK, out)
}

// APIScheduleGet shows one schedule.
func (h *Handler) APIScheduleGet(c echo.Context) error {
	s, err := h.workspaceSchedule(c)
	if err != nil {
		return err
	}
	return h.answerSchedule(c, s, http.StatusOK)
}

func (h *Handler) answerSchedule(c echo.Context, s *catalog.Schedule, status int) error {
	views, err := h.scheduleViews(c.Request().Context(), []*catalog.Schedule{s}, 1)
	if err != nil {
		return err
	}
	return c.JSON(status, views[0].json(h.Now(), h.automationRetention()))
}

// TickPage is a page of a schedule's ticks, newest first.
type TickPage struct {
	Schedule   string     `json:"schedule"`
	Ticks      []TickJSON `json:"ticks"`
	NextCursor string     `json:"next_cursor"` // "" on the last page
}

// tickQuery is a ticks list's ?outcome=, ?cursor= and ?limit=.
type tickQuery struct {
	outcomes []string
	cursor   *db.TickCursor
	limit    int
}

func parseTickQuery(c echo.Context, defLimit int) (tickQuery, error) {
	var q tickQuery
	var err error
	if q.limit, err = pageLimit(c, defLimit, MaxPageLimit); err != nil {
		return q, err
	}
	if q.outcomes, err = parseOutcomes(c.QueryParam("outcome")); err != nil {
		return q, err
	}
	q.cursor, err = cursorParam(c, nil, func(v string) (*db.TickCursor, error) {
		at, id, err := decodeAtCursor(v, "tk")
		if err == nil && id == "" {
			err = badCursor(v)
		}
		return &db.TickCursor{ScheduledFor: at, ID: id}, err
	})
	return q, err
}

// parseOutcomes reads a comma-separated outcome filter ("" is every outcome).
func parseOutcomes(v string) ([]string, error) {
	var out []string
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	for _, o := range strings.Split(v, ",") {
		o = strings.ToLower(strings.TrimSpace(o))
		if !slices.Contains(TickOutcomes, o) {
			return nil, BadRequest("outcome", "unknown outcome %q; use %s (comma-separated), or leave outcome out for every tick", o, strings.Join(TickOutcomes, ", "))
		}
		out = append(out, o)
	}
	return out, nil
}

// ticksPage reads one page of s's ticks.
func (h *Handler) ticksPage(ctx context.Context, s *catalog.Schedule, q tickQuery) ([]db.Tick, string, error) {
	rows, err := h.Store.ScheduleTicks(ctx, s.Name, q.cursor, q.outcomes, q.limit+1)
	if err != nil {
		return nil, "", err
	}
	rows, next := pageOf(rows, q.limit, func(last db.Tick) string { return encodeAtCursor("tk", last.ScheduledFor, last.ID) })
	return rows, next, nil
}

// APIScheduleTicks lists a schedule's ticks, newest first
// (?outcome=&cursor=&limit=).
func (h *Handler) APIScheduleTicks(c echo.Context) error {
	s, err := h.workspaceSchedule(c)
	if err != nil {
		return err
	}
	q, err := parseTickQuery(c, DefaultTickPageLimit)
	if err != nil {
		return err
	}
	rows, next, err := h.ticksPage(c.Request().Context(), s, q)
	if err != nil {
		return err
	}
	out := TickPage{Schedule: s.Name, Ticks: make([]TickJSON, 0, len(rows)), NextCursor: next}
	for _, t := range rows {
		out.Ticks = append(out.Ticks, toTickJSON(t, s.Cron.Location()))
	}
	return c.JSON(http.StatusOK, out)
}

// TickPreview is what the next tick of a schedule would launch.
type TickPreview struct {
	Schedule string `json:"schedule"`
	// TickAt is the next tick (null when the cron never fires again).
	TickAt      *string       `json:"tick_at"`
	TickAtLocal *string       `json:"tick_at_local"`
	Request     *jobs.Request `json:"request"`        // the backfill it would create (null when it skips)
	Preview     *jobs.Preview `json:"preview"`        // what that backfill would do
	SkipReason  string        `json:"skip_reason"`    // why it would launch nothing ("" when it launches)
	Note        string        `json:"note,omitempty"` // paused or disabled: the tick would be skipped for that
}

// tickPreview previews s's next tick after now.
func (h *Handler) tickPreview(ctx context.Context, s *catalog.Schedule, paused bool) (TickPreview, error) {
	out := TickPreview{Schedule: s.Name}
	eng, err := h.engine()
	if err != nil {
		return out, err
	}
	switch {
	case !s.Enabled:
		out.Note = "the schedule is disabled in the workspace: its ticks launch nothing"
	case paused:
		out.Note = "the schedule is paused: its ticks are recorded as skipped until it is resumed"
	}
	at, ok := s.Cron.Next(h.Now())
	if !ok {
		out.SkipReason = "the cron never fires again"
		return out, nil
	}
	a, l := apiTime(at), localTime(at, s.Cron.Location())
	out.TickAt, out.TickAtLocal = &a, &l
	req, skip, err := eng.TickRequest(ctx, s, at)
	switch {
	case err != nil:
		out.SkipReason = "it would fail: " + err.Error()
		return out, nil
	case skip != "":
		out.SkipReason = skip
		return out, nil
	}
	pv, err := eng.PreviewAt(ctx, req, at)
	var ie *jobs.InputError
	switch {
	case errors.As(err, &ie) && ie.Code == jobs.CodeEmptySelection:
		out.SkipReason = jobs.SkipNothingToBuild + ": " + ie.Msg
		return out, nil
	case errors.As(err, &ie):
		out.SkipReason = "it would fail: " + ie.Msg
		return out, nil
	case err != nil:
		return out, err
	}
	wordEstimate(pv)
	out.Request, out.Preview = &req, pv
	return out, nil
}

// APISchedulePreview previews the backfill of a schedule's next tick,
// writing nothing.
func (h *Handler) APISchedulePreview(c echo.Context) error {
	s, err := h.workspaceSchedule(c)
	if err != nil {
		return err
	}
	st, err := h.Store.ScheduleStateOf(c.Request().Context(), s.Name)
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		return err
	}
	pv, err := h.tickPreview(c.Request().Context(), s, st.Paused)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pv)
}

// APISchedulePause pauses a schedule: its ticks are recorded as skipped
// and never launched after a resume.
func (h *Handler) APISchedulePause(c echo.Context) error { return h.apiSchedulePaused(c, true) }

// APIScheduleResume resumes a paused schedule.
func (h *Handler) APIScheduleResume(c echo.Context) error { return h.apiSchedulePaused(c, false) }

func (h *Handler) apiSchedulePaused(c echo.Context, paused bool) error {
	sch, s, err := h.routeSchedule(c)
	if err != nil {
		return err
	}
	return apiSetPaused(c, func(ctx context.Context) error {
		if _, err := sch.SetPaused(ctx, s.Name, paused, Actor(c)); err != nil {
			return scheduleErr(err)
		}
		return nil
	}, func() error { return h.answerSchedule(c, s, http.StatusOK) })
}

// TriggerResult is a run-now tick with the backfill it launched.
type TriggerResult struct {
	Tick     TickJSON      `json:"tick"`
	Backfill *BackfillJSON `json:"backfill"` // null when the tick launched nothing (its outcome and reason say why)
}

// APIScheduleTrigger runs a schedule now: 201 with the tick it recorded
// and the backfill it launched (null when it launched none: the tick's
// outcome and reason say why).
func (h *Handler) APIScheduleTrigger(c echo.Context) error {
	sch, s, err := h.routeSchedule(c)
	if err != nil {
		return err
	}
	if err := decodeStrict(c, &struct{}{}, true); err != nil {
		return err
	}
	r, err := sch.Trigger(c.Request().Context(), s.Name, Actor(c))
	if err != nil {
		return scheduleErr(err)
	}
	out := TriggerResult{Tick: toTickJSON(r.Tick, s.Cron.Location())}
	if r.Backfill != nil {
		b := ToBackfillJSON(*r.Backfill)
		out.Backfill = &b
		c.Response().Header().Set(echo.HeaderLocation, "/api/v1/backfills/"+url.PathEscape(b.ID))
	}
	return c.JSON(http.StatusCreated, out)
}
