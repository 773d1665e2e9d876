package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// The backfill page's chunk timeline: a Gantt chart of when each chunk's
// attempts ran and on how many slots at once, drawn by the server.

// Gantt drawing bounds: up to GanttBarsMax attempts are drawn one bar each
// (a lane per slot); more are drawn as GanttColumns columns of the slots
// busy on average, so that the drawing's size does not grow with the
// chunks (about 40 KB at any number).
const (
	GanttBarsMax = 200
	GanttColumns = 120
	ganttWidth   = 1000
	ganttHeight  = 160 // buckets mode; chunks mode: laneH per lane, at most this
	ganttLaneMax = 18
)

// ganttState is the colour class of an attempt state: interrupted and
// canceled attempts are drawn as canceled, timeouts as failed.
func ganttState(s string) string {
	switch s {
	case db.AttemptSucceeded, db.AttemptFailed, db.AttemptRunning:
		return s
	case db.AttemptTimeout:
		return db.AttemptFailed
	}
	return db.RunCanceled
}

// ganttOf draws backfill id's chunk timeline at now (running attempts end
// there).
func (h *Handler) ganttOf(ctx context.Context, id string, live bool, now time.Time) (views.Gantt, error) {
	spans, err := h.Store.RunSpans(ctx, id)
	if err != nil {
		return views.Gantt{}, err
	}
	g := ganttDraw(spans, db.Millis(now), zoneOf(ctx))
	g.Href, g.Live, g.RunsHref = BackfillHref(id)+"/gantt", live, "/runs?backfill="+url.QueryEscape(id)
	return g, nil
}

// ganttDraw lays spans (by start) out; see views.Gantt.
func ganttDraw(spans []db.RunSpan, nowMs int64, loc *time.Location) views.Gantt {
	g := views.Gantt{Width: ganttWidth, Attempts: len(spans), Mode: "chunks"}
	if len(spans) == 0 {
		g.Empty = true
		return g
	}
	end := func(s db.RunSpan) int64 {
		if s.Finished != nil {
			return max(*s.Finished, s.Started)
		}
		return max(nowMs, s.Started)
	}
	t0, t1 := spans[0].Started, spans[0].Started
	for _, s := range spans {
		t0, t1 = min(t0, s.Started), max(t1, end(s))
	}
	if t1 == t0 {
		t1 = t0 + 1
	}
	g.Peak = ganttPeak(spans, end)
	g.Start, g.End = fmtTime(loc, db.FromMillis(t0)), fmtTime(loc, db.FromMillis(t1))
	g.Span = fmtDur(time.Duration(t1-t0) * time.Millisecond)
	x := func(t int64) float64 { return float64(t-t0) * ganttWidth / float64(t1-t0) }
	if len(spans) <= GanttBarsMax {
		ganttBars(&g, spans, end, x, loc)
	} else {
		ganttColumns(&g, spans, end, t0, t1, loc)
	}
	return g
}

// ganttPeak is the most spans running at once.
func ganttPeak(spans []db.RunSpan, end func(db.RunSpan) int64) int {
	// Spans come by start; with their ends sorted, the spans running when
	// span i starts are those started (i+1) less those ended by then.
	ends := make([]int64, 0, len(spans))
	for _, s := range spans {
		ends = append(ends, end(s))
	}
	slices.Sort(ends)
	peak, j := 0, 0
	for i, s := range spans {
		for j < len(ends) && ends[j] <= s.Started {
			j++
		}
		peak = max(peak, i+1-j)
	}
	return peak
}

// ganttBars draws each span as a bar on the first lane free when it starts.
func ganttBars(g *views.Gantt, spans []db.RunSpan, end func(db.RunSpan) int64, x func(int64) float64, loc *time.Location) {
	var lanes []int64 // when each lane is free again
	laneOf := make([]int, len(spans))
	for i, s := range spans {
		l := -1
		for k, free := range lanes {
			if free <= s.Started {
				l = k
				break
			}
		}
		if l < 0 {
			l = len(lanes)
			lanes = append(lanes, 0)
		}
		lanes[l] = end(s)
		laneOf[i] = l
	}
	laneH := min(ganttLaneMax, max(4, ganttHeight/len(lanes)))
	g.Height = laneH * len(lanes)
	for k := range lanes {
		g.Lanes = append(g.Lanes, views.GanttLane{Y: (k + 1) * laneH, Label: fmt.Sprintf("slot %d", k+1)})
	}
	for i, s := range spans {
		e := end(s)
		x0 := x(s.Started)
		w := max(x(e)-x0, 1.5) // an instant attempt stays visible
		st := ganttState(s.State)
		title := fmt.Sprintf("Chunk %d, attempt %d: %s, %s (%s to %s)", s.Chunk, s.Attempt, st,
			fmtDur(time.Duration(e-s.Started)*time.Millisecond), ganttClock(loc, s.Started), ganttClock(loc, e))
		if s.Finished == nil {
			title = fmt.Sprintf("Chunk %d, attempt %d: running for %s (since %s)", s.Chunk, s.Attempt,
				fmtDur(time.Duration(e-s.Started)*time.Millisecond), ganttClock(loc, s.Started))
		}
		g.Bars = append(g.Bars, views.GanttBar{X: x0, Y: float64(laneOf[i]*laneH) + 1, W: w, H: float64(laneH - 2),
			Class: views.RunStateClass(st), Title: title, Href: RunHref(s.RunID), Chunk: s.Chunk, Lane: laneOf[i] + 1})
	}
}

// ganttColumns cuts [t0, t1) into GanttColumns columns and stacks in each
// the slots busy on average by outcome (succeeded at the bottom).
func ganttColumns(g *views.Gantt, spans []db.RunSpan, end func(db.RunSpan) int64, t0, t1 int64, loc *time.Location) {
	g.Mode, g.Height = "buckets", ganttHeight
	order := []string{db.AttemptSucceeded, db.AttemptFailed, db.AttemptRunning, db.RunCanceled}
	idx := map[string]int{}
	for i, s := range order {
		idx[s] = i
	}
	width := float64(t1-t0) / GanttColumns
	busy := make([][4]float64, GanttColumns) // slot-milliseconds per column and outcome
	for _, s := range spans {
		k := idx[ganttState(s.State)]
		a, b := float64(s.Started-t0), float64(end(s)-t0)
		for c := int(a / width); c < GanttColumns && float64(c)*width < b; c++ {
			lo, hi := max(a, float64(c)*width), min(b, float64(c+1)*width)
			if hi > lo {
				busy[c][k] += hi - lo
			}
		}
	}
	peak := float64(max(g.Peak, 1))
	unit := float64(ganttHeight) / peak // height of one busy slot
	colW := float64(ganttWidth) / GanttColumns
	g.Bucket = fmtDur(time.Duration(width) * time.Millisecond)
	for _, n := range []int{1, 2, 4} { // a few slot-count lines
		if y := ganttHeight - int(float64(g.Peak*n/4)*unit); n*g.Peak >= 4 && y > 0 && y < ganttHeight {
			g.Lanes = append(g.Lanes, views.GanttLane{Y: y, Label: fmt.Sprintf("%d slots", g.Peak*n/4)})
		}
	}
	for c := range busy {
		x := float64(c) * colW
		y := float64(ganttHeight)
		total := 0.0
		for k, st := range order {
			avg := busy[c][k] / width
			total += avg
			if h := avg * unit; h >= 0.05 {
				y -= h
				g.Bars = append(g.Bars, views.GanttBar{X: x, Y: y, W: colW, H: h, Class: views.RunStateClass(st)})
			}
		}
		if total > 0 {
			from := t0 + int64(float64(c)*width)
			g.Bars = append(g.Bars, views.GanttBar{X: x, W: colW, Title: fmt.Sprintf("%s to %s: %.1f slots busy on average (%.1f succeeded, %.1f failed, %.1f running)",
				ganttClock(loc, from), ganttClock(loc, from+int64(width)), total, busy[c][0]/width, busy[c][1]/width, busy[c][2]/width)})
		}
	}
}

// ganttClock is a time of the chart in the reader's zone.
func ganttClock(loc *time.Location, ms int64) string { return fmtTime(loc, db.FromMillis(ms)) }

// BackfillGanttPartial redraws the chunk timeline (htmx, on the page's
// updates).
func (h *Handler) BackfillGanttPartial(c echo.Context) error {
	b, err := h.Store.Backfill(c.Request().Context(), c.Param("id"))
	if err != nil {
		return engineErr(err)
	}
	g, err := h.ganttOf(c.Request().Context(), b.ID, !db.BackfillTerminal(b.State), h.Now())
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.GanttSection(g))
}
