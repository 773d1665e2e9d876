package handlers

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/views"
)

// SensorPageSize is how many evaluations, events or run keys a sensor
// page lists at a time.
const SensorPageSize = 20

func sensorPageState(v sensorView) string {
	switch {
	case !v.Def.Enabled:
		return views.SensorStateDisabled
	case v.State.Paused:
		return views.SensorStatePaused
	case v.State.Status == db.SensorError:
		return views.SensorStateError
	}
	return views.SensorStateOK
}

// sensorTime writes a stored time for a sensor page in the reader's zone:
// "2026-03-29 03:00:12 CEST".
func sensorTime(loc *time.Location, ms int64) string {
	return fmtTime(loc, db.FromMillis(ms))
}

func (h *Handler) sensorRow(v sensorView, last *db.SensorEvaluation, loc *time.Location) views.SensorRow {
	s, st := v.Def, v.State
	r := views.SensorRow{Name: s.Name, Href: views.SensorHref(s.Name), Kind: sensorKind(s), State: sensorPageState(v), Assets: s.Assets,
		Events: st.EventsAccepted, Launches: st.Launches, Evals: st.Evaluations, Failures: st.Failures,
		PrunedEvals: st.PrunedEvaluations, PrunedEvents: st.PrunedEvents}
	if s.Poll() {
		r.Evaluator = fmt.Sprintf("%s every %s (timeout %s)", s.Evaluator.Kind, catalog.FormatDuration(s.Interval), catalog.FormatDuration(s.Timeout))
	}
	if st.Status == db.SensorError && st.LastError != nil {
		r.LastError = *st.LastError
	}
	switch {
	case last != nil:
		r.Last, r.LastAt = evaluationSummary(*last), sensorTime(loc, last.StartedAt)
	case v.LastEvent != nil:
		e := v.LastEvent
		r.Last, r.LastAt = fmt.Sprintf("event %s: %s", e.MessageID, e.Outcome), sensorTime(loc, e.ReceivedAt)
	}
	return r
}

// sensorStrip is the outcomes of v's newest evaluations or events, oldest
// first, for the Automation page: launched, skipped (nothing launched, a
// dry run, a cursor reset) or failed.
func sensorStrip(v sensorView, loc *time.Location) []views.TickCell {
	var cells []views.TickCell
	for i := len(v.RecentEvals) - 1; i >= 0; i-- {
		e := v.RecentEvals[i]
		outcome := db.TickSkipped
		switch {
		case e.Error != nil:
			outcome = db.TickFailed
		case e.Kind == db.EvalEvaluation && launchedBy(e) > 0:
			outcome = db.TickLaunched
		}
		cells = append(cells, views.TickCell{Outcome: outcome, Title: sensorTime(loc, e.StartedAt) + ": " + evaluationSummary(e)})
	}
	for i := len(v.RecentEvents) - 1; i >= 0; i-- {
		e := v.RecentEvents[i]
		title := fmt.Sprintf("%s: event %s: %s", sensorTime(loc, e.ReceivedAt), e.MessageID, e.Outcome)
		if e.Reason != nil {
			title += " (" + *e.Reason + ")"
		}
		cells = append(cells, views.TickCell{Outcome: e.Outcome, Title: title})
	}
	return cells
}

// launchedBy counts the backfills an evaluation launched.
func launchedBy(e db.SensorEvaluation) int {
	outs, _ := jobs.ReadOutcomes(e.Requests)
	n := 0
	for _, o := range outs {
		if o.Backfill != "" {
			n++
		}
	}
	return n
}

// evaluationSummary says in a few words what an evaluation did.
func evaluationSummary(e db.SensorEvaluation) string {
	kind := "evaluation"
	switch e.Kind {
	case db.EvalDryRun:
		kind = "dry run"
	case db.EvalReset:
		return "cursor reset by " + e.Actor
	}
	if e.Error != nil {
		return kind + " failed"
	}
	outs, _ := jobs.ReadOutcomes(e.Requests)
	launched := launchedBy(e)
	switch {
	case e.Kind == db.EvalDryRun:
		return fmt.Sprintf("%s: %s", kind, countOf(len(outs), "request"))
	case launched > 0:
		return fmt.Sprintf("%s: launched %s", kind, countOf(launched, "backfill"))
	case e.SkipReason != nil:
		return kind + ": skipped (" + *e.SkipReason + ")"
	case len(outs) > 0:
		// Every request's run key was used already.
		return fmt.Sprintf("%s: %s, none launched (run key used)", kind, countOf(len(outs), "request"))
	}
	return kind + ": nothing requested"
}

// SensorsPage renders /sensors: every sensor of the workspace.
func (h *Handler) SensorsPage(c echo.Context) error {
	ctx := c.Request().Context()
	vs, err := h.sensorViews(ctx, h.Workspace().Workspace.Sensors, 1)
	if err != nil {
		return err
	}
	// At most three queries however many sensors: their states, the push
	// sensors' newest events, the poll sensors' newest evaluations.
	m := views.SensorsPage{}
	for _, v := range vs {
		m.Sensors = append(m.Sensors, h.sensorRow(v, v.LastEval, zoneOfC(c)))
	}
	return render(c, http.StatusOK, views.SensorsView(page(c, "Sensors", "sensors"), m))
}

// sensorDefinition lists a sensor's settings for its page.
func sensorDefinition(s *catalog.Sensor) []views.KV {
	kind := "push: launches a backfill for each event sent to POST /api/v1/sensors/" + url.PathEscape(s.Name) + "/events"
	if s.Poll() {
		kind = fmt.Sprintf("poll: its %s evaluator is called every %s, and stopped after %s", s.Evaluator.Kind, catalog.FormatDuration(s.Interval), catalog.FormatDuration(s.Timeout))
	}
	return append([]views.KV{{K: "Kind", V: kind}, {K: "Assets", V: strings.Join(s.Assets, ", ")}},
		launchSettings(s.ChunkSize, s.MaxConcurrent, s.Priority, s.Enabled)...)
}

// SensorPage renders /sensors/:name (?evaluations=&events=&prefix=&after=).
func (h *Handler) SensorPage(c echo.Context) error {
	s, err := h.workspaceSensor(c)
	if err != nil {
		return err
	}
	d, err := h.sensorDetail(c, s)
	if err != nil {
		return err
	}
	d.Notice, d.NoticeLink = h.takeActionNotice(c, d.Href)
	return render(c, http.StatusOK, views.SensorPageView(page(c, "Sensor "+s.Name, "sensors"), d))
}

// sensorQuery is the query of a sensor page's list: its own cursor
// parameter read as the API's "cursor".
func sensorQuery(c echo.Context, param string) echo.Context {
	q := url.Values{"limit": {fmt.Sprint(SensorPageSize)}}
	if v := c.QueryParam(param); v != "" {
		q.Set("cursor", v)
	}
	for _, k := range []string{"prefix", "after"} {
		if v := c.QueryParam(k); v != "" {
			q.Set(k, v)
		}
	}
	r := c.Request().Clone(c.Request().Context())
	r.URL.RawQuery = q.Encode()
	cc := c.Echo().NewContext(r, c.Response())
	return cc
}

func (h *Handler) sensorDetail(c echo.Context, s *catalog.Sensor) (views.SensorDetail, error) {
	ctx := c.Request().Context()
	loc := zoneOf(ctx)
	vs, err := h.sensorViews(ctx, []*catalog.Sensor{s}, 1)
	if err != nil {
		return views.SensorDetail{}, err
	}
	v := vs[0]
	d := views.SensorDetail{Definition: sensorDefinition(s), CSRF: page(c, "", "").CSRF, Retention: views.RetentionText(h.automationRetention())}
	st := v.State
	if st.Cursor != nil {
		d.Cursor, d.HasCursor = *st.Cursor, true
	}
	d.PausedBy = pausedByText(st.Paused, st.PausedBy, st.PausedAt, func(ms int64) string { return sensorTime(loc, ms) })
	if s.Poll() && st.NextEvaluationAt != nil && !st.Paused && s.Enabled {
		d.NextEval = sensorTime(loc, *st.NextEvaluationAt)
	}
	if s.Poll() {
		rows, next, err := h.evaluationsPage(sensorQuery(c, "evaluations"), s, SensorPageSize)
		if err != nil {
			return d, err
		}
		for _, e := range rows {
			d.Evaluations = append(d.Evaluations, evaluationRow(e, loc))
		}
		href := views.SensorHref(s.Name)
		d.EvalNext, d.EvalFirst = listPages(c, href, "evaluations", next)
		keys, knext, err := h.runKeysPage(sensorQuery(c, ""), s, SensorPageSize)
		if err != nil {
			return d, err
		}
		d.Prefix = c.QueryParam("prefix")
		for _, k := range keys {
			d.RunKeys = append(d.RunKeys, views.RunKeyRow{RunKey: k.RunKey, CreatedAt: sensorTime(loc, k.CreatedAt), Backfill: views.Link{Label: k.BackfillID, Href: BackfillHref(k.BackfillID)}})
		}
		if knext != "" {
			q := url.Values{"after": {knext}}
			if d.Prefix != "" {
				q.Set("prefix", d.Prefix)
			}
			d.KeysNext = href + "?" + q.Encode() + "#run-keys"
		}
	} else {
		rows, next, err := h.eventsPage(sensorQuery(c, "events"), s, SensorPageSize)
		if err != nil {
			return d, err
		}
		for _, e := range rows {
			d.Events = append(d.Events, views.SensorEventRow{MessageID: e.MessageID, ReceivedAt: sensorTime(loc, e.ReceivedAt), Outcome: e.Outcome,
				Reason: deref(e.Reason), Backfill: backfillLink(e.BackfillID), Actor: e.Actor})
		}
		d.EventsNext, d.EventsFirst = listPages(c, views.SensorHref(s.Name), "events", next)
	}
	d.SensorRow = h.sensorRow(v, v.LastEval, zoneOfC(c))
	if canOperate(c) && h.Sensors != nil {
		href := d.Href
		if st.Paused {
			d.Buttons = append(d.Buttons, views.SensorButton{Name: views.SensorActionResume, Label: "Resume", Href: href + "/resume"})
		} else {
			d.Buttons = append(d.Buttons, views.SensorButton{Name: views.SensorActionPause, Label: "Pause", Href: href + "/pause"})
		}
		if s.Poll() {
			d.Buttons = append(d.Buttons, views.SensorButton{Name: views.SensorActionEvaluate, Label: "Evaluate now", Href: href + "/evaluate"},
				views.SensorButton{Name: views.SensorActionDryRun, Label: "Dry run", Href: href + "/dry-run"})
		}
		p := CurrentPrincipal(c)
		d.CanReset = s.Poll() && p != nil && p.Role >= auth.RoleAdmin
	}
	return d, nil
}

func evaluationRow(e db.SensorEvaluation, loc *time.Location) views.EvaluationRow {
	r := views.EvaluationRow{ID: e.ID, Kind: e.Kind, StartedAt: sensorTime(loc, e.StartedAt), Duration: fmt.Sprintf("%d ms", e.DurationMs), Actor: e.Actor,
		CursorBefore: cursorText(e.CursorBefore), CursorAfter: cursorText(e.CursorAfter),
		SkipReason: deref(e.SkipReason), Error: deref(e.Error), LogTail: deref(e.LogTail)}
	outs, _ := jobs.ReadOutcomes(e.Requests)
	for _, o := range outs {
		rr := views.EvalRequestRow{Assets: "every asset of the sensor", RunKey: o.RunKey, Skipped: o.Skipped}
		if len(o.Assets) > 0 {
			rr.Assets = strings.Join(o.Assets, ", ")
		}
		switch {
		case len(o.Partitions) > 0:
			rr.Selection = fmt.Sprintf("%s (%s)", countOf(len(o.Partitions), "partition"), firstKeys(o.Partitions, 5))
		default:
			rr.Selection = fmt.Sprintf("from %s to %s", o.Start, o.End)
		}
		if o.Backfill != "" {
			rr.Backfill = &views.Link{Label: o.Backfill, Href: BackfillHref(o.Backfill)}
		}
		if o.Preview != nil {
			rr.Preview = fmt.Sprintf("would build %s in %s", countOf(int(o.Preview.TotalPartitions), "partition"), countOf(int(o.Preview.TotalChunks), "chunk"))
		}
		r.Requests = append(r.Requests, rr)
	}
	return r
}

// listPages links a list of the sensor page at href whose cursor is the
// query parameter list, and whose heading is #list: to the page after
// cursor next ("" when this one is the last), and to the first page when
// this one is not.
func listPages(c echo.Context, href, list, next string) (nextHref, first string) {
	if next != "" {
		nextHref = href + "?" + url.Values{list: {next}}.Encode() + "#" + list
	}
	if c.QueryParam(list) != "" {
		first = href + "#" + list
	}
	return nextHref, first
}

func firstKeys(keys []string, n int) string {
	if len(keys) <= n {
		return strings.Join(keys, ", ")
	}
	return strings.Join(keys[:n], ", ") + fmt.Sprintf(", … %d more", len(keys)-n)
}

func cursorText(c *string) string {
	if c == nil {
		return "none"
	}
	if len(*c) > 80 {
		return (*c)[:80] + "…"
	}
	return *c
}

// SensorAction handles the sensor page's Pause, Resume, Evaluate now and
// Dry run buttons: back to the page with what was done, or the page again
// with why not (409).
func (h *Handler) SensorAction(c echo.Context) error {
	sn, s, err := h.routeSensor(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	fl := Flash{Page: views.SensorHref(s.Name)}
	switch a := views.SensorAction(c.Param("action")); a {
	case views.SensorActionPause, views.SensorActionResume:
		paused := a == views.SensorActionPause
		_, err = sn.SetPaused(ctx, s.Name, paused, actor(c))
		fl.Notice = "Sensor resumed."
		if paused {
			fl.Notice = "Sensor paused: it is not evaluated, and pushed events are refused (409) until it is resumed."
		}
	case views.SensorActionEvaluate, views.SensorActionDryRun:
		var ev jobs.Evaluation
		ev, err = sn.Evaluate(ctx, s.Name, a == views.SensorActionDryRun, actor(c))
		if err == nil {
			fl.Notice = evaluateNotice(ev)
			for _, o := range ev.Outcomes {
				if o.Backfill != "" {
					fl.NewName = o.Backfill
					break
				}
			}
		}
	default:
		return NotFound("no sensor action %q; use pause, resume, evaluate or dry-run", c.Param("action"))
	}
	if err != nil {
		return h.sensorRefused(c, s, sensorErr(err))
	}
	return h.backToPage(c, fl)
}

// sensorRefused shows the sensor page again with why an action was not
// done (409), or answers the error.
func (h *Handler) sensorRefused(c echo.Context, s *catalog.Sensor, uerr error) error {
	load := func() (views.SensorDetail, error) { return h.sensorDetail(c, s) }
	return refusedOnPage(c, uerr, []int{http.StatusConflict, http.StatusBadRequest}, load, func(d views.SensorDetail, msg string, _ *UserError) templ.Component {
		d.Message = msg
		return views.SensorPageView(page(c, "Sensor "+s.Name, "sensors"), d)
	})
}

func evaluateNotice(ev jobs.Evaluation) string {
	r := ev.Record
	what := "Evaluation"
	if r.Kind == db.EvalDryRun {
		what = "Dry run"
	}
	if r.Error != nil {
		return what + " failed: " + *r.Error + "."
	}
	if r.Kind == db.EvalDryRun {
		return fmt.Sprintf("Dry run: the evaluator would request %s (nothing launched, the cursor unchanged); its requests are the newest evaluation below.", countOf(len(ev.Outcomes), "backfill"))
	}
	launched := 0
	for _, o := range ev.Outcomes {
		if o.Backfill != "" {
			launched++
		}
	}
	return fmt.Sprintf("Evaluation: %s, %s launched.", countOf(len(ev.Outcomes), "request"), countOf(launched, "backfill"))
}

// SensorCursorAction handles the sensor page's cursor form (admin): set
// the cursor to the value given, or clear it.
func (h *Handler) SensorCursorAction(c echo.Context) error {
	sn, s, err := h.routeSensor(c)
	if err != nil {
		return err
	}
	var cur *string
	if c.FormValue("clear") == "" {
		v := c.FormValue("cursor")
		if len(v) > MaxSensorCursor {
			return h.sensorRefused(c, s, BadRequest("cursor", "the cursor is %d bytes long; at most %d", len(v), MaxSensorCursor))
		}
		cur = &v
	}
	if _, err := sn.ResetCursor(c.Request().Context(), s.Name, cur, actor(c)); err != nil {
		return h.sensorRefused(c, s, sensorErr(err))
	}
	notice := "Cursor cleared: the next evaluation starts without one."
	if cur != nil {
		notice = fmt.Sprintf("Cursor set to %q: the next evaluation starts from it.", *cur)
	}
	return h.backToPage(c, Flash{Page: views.SensorHref(s.Name), Notice: notice})
}
