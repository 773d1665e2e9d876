package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/views"
)

// StripTicks is how many recent ticks the Automation page's strip shows.
const StripTicks = 20

// TickPageSize is how many ticks a schedule page lists at a time.
const TickPageSize = 25

// pageTime writes t in loc for a page: "2026-03-29 03:00 CEST", with
// seconds when it has them.
func pageTime(t time.Time, loc *time.Location) string {
	l := t.In(loc)
	if l.Second() != 0 {
		return l.Format("2006-01-02 15:04:05 MST")
	}
	return l.Format("2006-01-02 15:04 MST")
}

// pageTimeBoth writes t in the schedule's zone and, when that is not UTC,
// in UTC too; then in the reader's display zone (user) when that is
// neither.
func pageTimeBoth(t time.Time, loc, user *time.Location) string {
	s := pageTime(t, loc)
	if also := alsoTimes(t, loc, user); also != "" {
		return s + " (" + also + ")"
	}
	return s
}

// alsoTimes writes t in the other zones a schedule's time is shown in,
// "; " between them: UTC when the schedule's zone is not UTC, then the
// reader's display zone when that is neither ("" when the schedule's own
// time says it all).
func alsoTimes(t time.Time, loc, user *time.Location) string {
	var also []string
	if u := utcTime(t, loc); u != "" {
		also = append(also, u)
	}
	if y := yourTime(t, loc, user); y != "" {
		also = append(also, y)
	}
	return strings.Join(also, "; ")
}

// utcTime writes t in UTC when the schedule's zone is not UTC ("" when it
// is: the schedule's time already says it).
func utcTime(t time.Time, loc *time.Location) string {
	if loc.String() == "UTC" {
		return ""
	}
	return pageTime(t, time.UTC)
}

// yourTime writes t in the reader's display zone when that is neither the
// schedule's zone nor UTC ("" otherwise).
func yourTime(t time.Time, loc, user *time.Location) string {
	if user == nil || user.String() == loc.String() || user.String() == "UTC" {
		return ""
	}
	return pageTime(t, user)
}

func scheduleState(v scheduleView) string {
	switch {
	case !v.Def.Enabled:
		return views.ScheduleDisabled
	case v.State.Paused:
		return views.SchedulePaused
	}
	return views.ScheduleRunning
}

func (h *Handler) scheduleRow(v scheduleView, strip []db.Tick, user *time.Location) views.ScheduleRow {
	s := v.Def
	loc := s.Cron.Location()
	r := views.ScheduleRow{Name: s.Name, Href: views.ScheduleHref(s.Name), State: scheduleState(v), Cron: s.CronExpr, Timezone: timezoneOf(s),
		Assets: s.Assets, Launched: v.State.TicksLaunched, Skipped: v.State.TicksSkipped, Failed: v.State.TicksFailed, PrunedTicks: v.State.PrunedTicks}
	if s.Enabled {
		if next, ok := s.Cron.Next(h.Now()); ok {
			r.NextTick = pageTimeBoth(next, loc, user)
		}
	}
	if t := v.LastTick; t != nil {
		r.LastOutcome, r.LastTickAt = t.Outcome, pageTimeBoth(db.FromMillis(t.ScheduledFor), loc, user)
		if t.Reason != nil {
			r.LastReason = *t.Reason
		}
	}
	for i := len(strip) - 1; i >= 0; i-- {
		t := strip[i]
		title := pageTime(db.FromMillis(t.ScheduledFor), loc) + ": " + t.Outcome
		if t.Reason != nil {
			title += " (" + *t.Reason + ")"
		}
		r.Strip = append(r.Strip, views.TickCell{Outcome: t.Outcome, Title: title})
	}
	return r
}

// AutomationPage renders /automation: every schedule and every sensor of
// the workspace.
func (h *Handler) AutomationPage(c echo.Context) error {
	ctx := c.Request().Context()
	// Two queries however many schedules: their states, and the newest
	// StripTicks ticks of each; three however many sensors: their states,
	// the push sensors' newest events, the poll sensors' newest
	// evaluations (TestAutomationPageQueries counts them).
	vs, err := h.scheduleViews(ctx, h.Workspace().Workspace.Schedules, StripTicks)
	if err != nil {
		return err
	}
	m := views.AutomationPage{}
	for _, v := range vs {
		m.Schedules = append(m.Schedules, h.scheduleRow(v, v.Recent, zoneOf(ctx)))
	}
	svs, err := h.sensorViews(ctx, h.Workspace().Workspace.Sensors, StripTicks)
	if err != nil {
		return err
	}
	for _, v := range svs {
		r := h.sensorRow(v, v.LastEval, zoneOf(ctx))
		r.Strip = sensorStrip(v, zoneOf(ctx))
		m.Sensors = append(m.Sensors, r)
	}
	return render(c, http.StatusOK, views.AutomationView(page(c, "Automation", "automation"), m))
}

// definition lists a schedule's settings for its page.
func definition(s *catalog.Schedule) []views.KV {
	target := map[string]string{
		catalog.TargetClosedWindows: "the windows that closed since the previous tick",
		catalog.TargetMissingWithin: "missing or failed partitions of the last " + catalog.HumanDuration(s.MissingWithin),
		catalog.TargetAll:           "every partition",
	}[s.Target]
	overlap := map[string]string{
		catalog.OverlapSkip:  "skip (a tick is skipped while the previous tick's backfill runs)",
		catalog.OverlapQueue: "queue (a tick waits for the previous tick's backfill to end)",
		catalog.OverlapAllow: "allow (a tick launches beside the previous tick's backfill)",
	}[s.Overlap]
	kvs := []views.KV{
		{K: "Cron", V: s.CronExpr}, {K: "Time zone", V: timezoneOf(s)}, {K: "Assets", V: strings.Join(s.Assets, ", ")},
		{K: "Targets", V: target}, {K: "Overlap", V: overlap},
		{K: "Catch-up", V: fmt.Sprintf("ticks missed within %s, at most %d", catalog.FormatDuration(s.Catchup.Window), s.Catchup.MaxTicks)},
	}
	kvs = append(kvs, launchSettings(s.ChunkSize, s.MaxConcurrent, s.Priority, s.Enabled)...)
	return append(kvs, views.KV{K: "Definition", V: s.Hash()})
}

// launchSettings are the settings of the backfills a schedule or a sensor
// launches, and whether it is enabled, for its page. A size the workspace
// leaves out shows the value its backfills get ("1 (the default)"), not a
// bare "default".
func launchSettings(chunkSize, maxConcurrent, priority int64, enabled bool) []views.KV {
	chunk := fmt.Sprintf("%d (the default)", jobs.DefaultChunkSize)
	conc := fmt.Sprintf("%d (the default)", jobs.DefaultMaxConcurrentRuns)
	if chunkSize > 0 {
		chunk = fmt.Sprint(chunkSize)
	}
	if maxConcurrent > 0 {
		conc = fmt.Sprint(maxConcurrent)
	}
	on := "yes"
	if !enabled {
		on = "no (enabled: false in the workspace)"
	}
	return []views.KV{{K: "Chunk size", V: chunk}, {K: "Max concurrent runs", V: conc}, {K: "Priority", V: fmt.Sprint(priority)}, {K: "Enabled", V: on}}
}

// pausedByText says who paused a schedule or a sensor and when (when, at
// Unix milliseconds, in the page's words); "" while it is not paused.
func pausedByText(paused bool, by *string, at *int64, when func(ms int64) string) string {
	if !paused || by == nil || at == nil {
		return ""
	}
	return fmt.Sprintf("by %s at %s", *by, when(*at))
}

// takeActionNotice takes the flash an action left for the page at href:
// its notice, and a link to the backfill it launched, if any.
func (h *Handler) takeActionNotice(c echo.Context, href string) (string, *views.Link) {
	fl, ok := h.Auth.TakeFlash(CurrentPrincipal(c), href)
	if !ok {
		return "", nil
	}
	if fl.NewName == "" {
		return fl.Notice, nil
	}
	return fl.Notice, &views.Link{Label: "Open backfill " + fl.NewName, Href: BackfillHref(fl.NewName)}
}

// SchedulePage renders /schedules/:name (?outcome=&cursor=).
func (h *Handler) SchedulePage(c echo.Context) error {
	s, err := h.workspaceSchedule(c)
	if err != nil {
		return err
	}
	d, err := h.scheduleDetail(c, s)
	if err != nil {
		return err
	}
	d.Notice, d.NoticeLink = h.takeActionNotice(c, d.Href)
	return render(c, http.StatusOK, views.SchedulePageView(page(c, "Schedule "+s.Name, "automation"), d))
}

func (h *Handler) scheduleDetail(c echo.Context, s *catalog.Schedule) (views.ScheduleDetail, error) {
	ctx := c.Request().Context()
	q, err := parseTickQuery(c, TickPageSize)
	if err != nil {
		return views.ScheduleDetail{}, err
	}
	vs, err := h.scheduleViews(ctx, []*catalog.Schedule{s}, 1)
	if err != nil {
		return views.ScheduleDetail{}, err
	}
	v := vs[0]
	loc, user := s.Cron.Location(), zoneOf(ctx)
	d := views.ScheduleDetail{ScheduleRow: h.scheduleRow(v, nil, user), Definition: definition(s), Outcomes: TickOutcomes,
		Outcome: strings.Join(q.outcomes, ","), CSRF: page(c, "", "").CSRF, Retention: views.RetentionText(h.automationRetention())}
	d.PausedBy = pausedByText(v.State.Paused, v.State.PausedBy, v.State.PausedAt, func(ms int64) string { return pageTime(db.FromMillis(ms), user) })
	for _, t := range nextTicks(s, h.Now(), NextTicksShown) {
		at, _ := time.Parse(time.RFC3339, t.At)
		d.NextTicks = append(d.NextTicks, views.NextTick{Local: pageTime(at, loc), UTC: utcTime(at, loc), Yours: yourTime(at, loc, user)})
	}
	if d.Preview, err = h.previewView(c, s, v.State.Paused); err != nil {
		return d, err
	}
	rows, next, err := h.ticksPage(ctx, s, q)
	if err != nil {
		return d, err
	}
	for _, t := range rows {
		d.Ticks = append(d.Ticks, tickRow(t, loc, user))
	}
	filter := url.Values{}
	if d.Outcome != "" {
		filter.Set("outcome", d.Outcome)
	}
	if next != "" {
		nq := url.Values{"cursor": {next}}
		if d.Outcome != "" {
			nq.Set("outcome", d.Outcome)
		}
		d.Next = d.Href + "?" + nq.Encode() + "#ticks"
	}
	if q.cursor != nil {
		d.First = d.Href
		if len(filter) > 0 {
			d.First += "?" + filter.Encode()
		}
		d.First += "#ticks"
	}
	if canOperate(c) && h.Scheduler != nil {
		href := d.Href
		if v.State.Paused {
			d.Buttons = append(d.Buttons, views.ScheduleButton{Name: views.ScheduleActionResume, Label: "Resume", Href: href + "/resume"})
		} else {
			d.Buttons = append(d.Buttons, views.ScheduleButton{Name: views.ScheduleActionPause, Label: "Pause", Href: href + "/pause"})
		}
		d.Buttons = append(d.Buttons, views.ScheduleButton{Name: views.ScheduleActionTrigger, Label: "Run now", Href: href + "/trigger"})
	}
	return d, nil
}

func tickRow(t db.Tick, loc, user *time.Location) views.TickRow {
	at := db.FromMillis(t.ScheduledFor)
	return views.TickRow{ID: t.ID, ScheduledFor: pageTime(at, loc), ScheduledUTC: alsoTimes(at, loc, user), EvaluatedAt: fmtStamp(user, &t.EvaluatedAt),
		Outcome: t.Outcome, Reason: deref(t.Reason), Backfill: backfillLink(t.BackfillID), Manual: t.Manual, Actor: t.Actor}
}

// previewView is the schedule page's preview of the next tick.
func (h *Handler) previewView(c echo.Context, s *catalog.Schedule, paused bool) (views.TickPreviewView, error) {
	var v views.TickPreviewView
	pv, err := h.tickPreview(c.Request().Context(), s, paused)
	var ue *UserError
	if errors.As(err, &ue) && ue.Status == http.StatusServiceUnavailable {
		v.Skip = "no preview: " + ue.Message
		return v, nil
	}
	if err != nil {
		return v, err
	}
	v.Skip, v.Note = pv.SkipReason, pv.Note
	if pv.TickAt != nil {
		at, _ := time.Parse(time.RFC3339, *pv.TickAt)
		v.TickAt = pageTimeBoth(at, s.Cron.Location(), zoneOf(c.Request().Context()))
	}
	if pv.Preview != nil {
		sel, _ := json.Marshal(pv.Request.Selector)
		v.Selection = describeSelectorOf(string(sel), "")
		est := estimateOf(pv.Preview)
		v.Partitions, v.Chunks, v.Estimate = pv.Preview.TotalPartitions, pv.Preview.TotalChunks, &est
		for _, a := range pv.Preview.Assets {
			v.Assets = append(v.Assets, views.KV{K: a.Asset, V: views.Num(a.Partitions) + " partition" + plural(a.Partitions)})
		}
	}
	return v, nil
}

// ScheduleAction handles the schedule page's Pause, Resume and Run now
// buttons: back to the page with what was done, or the page again with
// why not (409).
func (h *Handler) ScheduleAction(c echo.Context) error {
	sch, s, err := h.routeSchedule(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	fl := Flash{Page: views.ScheduleHref(s.Name)}
	switch views.ScheduleAction(c.Param("action")) {
	case views.ScheduleActionPause, views.ScheduleActionResume:
		paused := views.ScheduleAction(c.Param("action")) == views.ScheduleActionPause
		_, err = sch.SetPaused(ctx, s.Name, paused, actor(c))
		fl.Notice = "Schedule resumed: its next tick launches."
		if paused {
			fl.Notice = "Schedule paused: its ticks are recorded as skipped until it is resumed, and are not launched then."
		}
	case views.ScheduleActionTrigger:
		var r jobs.TickResult
		r, err = sch.Trigger(ctx, s.Name, actor(c))
		if err == nil {
			fl.Notice = triggerNotice(r.Tick)
			if r.Backfill != nil {
				fl.NewName = r.Backfill.ID
			}
		}
	default:
		return NotFound("no schedule action %q; use pause, resume or trigger", c.Param("action"))
	}
	if err != nil {
		load := func() (views.ScheduleDetail, error) { return h.scheduleDetail(c, s) }
		return refusedOnPage(c, scheduleErr(err), []int{http.StatusConflict}, load, func(d views.ScheduleDetail, msg string, _ *UserError) templ.Component {
			d.Message = msg
			return views.SchedulePageView(page(c, "Schedule "+s.Name, "automation"), d)
		})
	}
	return h.backToPage(c, fl)
}

func triggerNotice(t db.Tick) string {
	switch {
	case t.Outcome == db.TickLaunched:
		return "Run now: tick " + t.ID + " launched a backfill."
	case t.Reason != nil:
		return fmt.Sprintf("Run now: tick %s was %s: %s.", t.ID, t.Outcome, *t.Reason)
	}
	return fmt.Sprintf("Run now: tick %s was %s.", t.ID, t.Outcome)
}
