package handlers

import (
	"context"
	"encoding/csv"
	"fmt"
	"html"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// SparkDays is the number of days the status board's sparkline covers.
const SparkDays = 30

// AssetStatus is one asset on the status board and in its exports.
type AssetStatus struct {
	Key         string           `json:"asset"`
	Group       string           `json:"group"`
	Partitions  int64            `json:"partitions"`
	Fresh       int64            `json:"fresh"`
	Stale       int64            `json:"stale"`
	Failed      int64            `json:"failed"`
	InProgress  int64            `json:"in_progress"`
	Missing     int64            `json:"missing"`
	LastFailed  int64            `json:"last_attempt_failed"`
	FreshShare  float64          `json:"fresh_share"`
	ByReason    map[string]int64 `json:"stale_by_reason"`
	LatestFresh string           `json:"latest_fresh_partition"`
	// LagSeconds is how far the latest fresh partition is behind now: now −
	// the end of its window (time partitions) or now − its materialization.
	LagSeconds *int64    `json:"lag_seconds"`
	Policy     string    `json:"freshness_policy"`
	OverPolicy bool      `json:"over_policy"`
	Failing    bool      `json:"failing"`
	Badge      string    `json:"badge"`
	Spark      []float64 `json:"fresh_share_last_30_days"`
	score      float64
	ended      bool // the latest fresh partition is the last of an ended scheme
}

// statusBoard computes every asset's status, worst first within groups
// (groups in workspace order).
func (h *Handler) statusBoard(ctx context.Context) ([]AssetStatus, time.Time, error) {
	sc, err := h.staleCtx(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	// Shared by the board's viewers and exports for a moment (pageKey).
	m, err := h.pageModels.get(ctx, pageKey{page: "status", ws: h.Workspace(), version: h.Store.PageVersion(), at: pageStep(sc.now)}, func() (any, error) {
		list, err := h.statusList(ctx, sc)
		return statusModel{list, sc.now}, err
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	sm := m.(statusModel)
	return sm.list, sm.now, nil
}

// statusModel is the status board's rows and the time they are of.
type statusModel struct {
	list []AssetStatus
	now  time.Time
}

// statusList is the status board's rows at sc, each asset's facts computed
// first (warmFacts).
func (h *Handler) statusList(ctx context.Context, sc *staleCtx) ([]AssetStatus, error) {
	if err := h.warmFacts(ctx, sc, 1); err != nil {
		return nil, err
	}
	ws := h.Workspace()
	out := make([]AssetStatus, 0, len(ws.Assets))
	groupOrder := map[string]int{}
	for _, a := range ws.Assets {
		g := a.Group
		if g == "" {
			g = catalog.DefaultGroup
		}
		if _, ok := groupOrder[g]; !ok {
			groupOrder[g] = len(groupOrder)
		}
		st, err := h.assetStatus(ctx, sc, a, g)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	sort.SliceStable(out, func(i, j int) bool {
		gi, gj := groupOrder[out[i].Group], groupOrder[out[j].Group]
		if gi != gj {
			return gi < gj
		}
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].Key < out[j].Key
	})
	return out, nil
}

func (h *Handler) assetStatus(ctx context.Context, sc *staleCtx, a *catalog.Asset, group string) (AssetStatus, error) {
	f, err := h.staleFacts(ctx, sc, a)
	if err != nil {
		return AssetStatus{}, err
	}
	sp := sc.in.SpaceOf(a)
	n := sp.Len()
	c := f.Health(0, n-1, sc.now)
	st := AssetStatus{Key: a.Key, Group: group, Partitions: n, Fresh: c.Fresh, Stale: c.Stale, Failed: c.Failed,
		InProgress: c.InProgress, Missing: c.Missing, LastFailed: c.LastAttemptFailed, ByReason: map[string]int64{}}
	for _, r := range staleReasons() {
		st.ByReason[string(r)] = c.StaleBy[r]
	}
	if n > 0 {
		st.FreshShare = float64(st.Fresh) / float64(n)
	}
	if a.Freshness != nil {
		st.Policy = policyLabel(a.Freshness)
	}
	if i := f.LatestWhere(catalog.Fresh, sc.now); i >= 0 {
		st.LatestFresh = sp.Key(i)
		var end time.Time
		ends, hasWindow := catalog.WindowEnds(a.Scheme, sp)
		if hasWindow {
			end = ends(i)
		}
		// An ended scheme whose final window is fresh is not behind (lag 0).
		d, ended := catalog.AssetLag(a.Scheme, end, hasWindow, f.MatAtOf(i), sc.now)
		lag := int64(d / time.Second)
		st.LagSeconds, st.ended = &lag, ended
		if a.Freshness != nil && a.Freshness.MaxLag > 0 && time.Duration(lag)*time.Second > a.Freshness.MaxLag {
			st.OverPolicy = true
		}
		// A "by HH:MM" policy: the window after the latest fresh one is
		// overdue once its deadline has passed (never built, it is
		// NEVER_MATERIALIZED, not FRESHNESS, so the count below misses it).
		if a.Freshness != nil && a.Freshness.DeadlineHHMM != "" && i+1 < n {
			if ends, ok := catalog.WindowEnds(a.Scheme, sp); ok && a.Freshness.Deadline(ends(i+1)).Before(sc.now) {
				st.OverPolicy = true
			}
		}
	} else if a.Freshness != nil {
		st.OverPolicy = true
	}
	if c.StaleBy[catalog.FreshnessLate] > 0 {
		st.OverPolicy = true
	}
	// One rule with the overview's "has failures" and the lineage graph:
	// failing when a partition has no data and its last attempt failed (a
	// failed attempt over data it kept is counted apart, last_attempt_failed).
	st.Failing = st.Failed > 0
	switch {
	case st.Failing:
		st.Badge = "failing"
	case st.Stale > 0:
		st.Badge = "stale " + views.Num(st.Stale)
	case st.Missing > 0:
		st.Badge = "missing " + views.Num(st.Missing)
	default:
		st.Badge = "fresh"
	}
	st.Spark = sparkline(a, sp, f, sc.now)
	st.score = 1 - st.FreshShare
	if st.Failing {
		st.score += 2
	}
	if st.OverPolicy {
		st.score += 1
	}
	return st, nil
}

// staleReasons are the reasons of stale partitions: every reason but
// NEVER_MATERIALIZED (those partitions have no data: failed or missing).
func staleReasons() []catalog.StaleReason {
	return catalog.StaleReasons[1:]
}

func policyLabel(f *catalog.Freshness) string {
	s := ""
	if f.MaxLag > 0 {
		s = "max lag " + catalog.FormatDuration(f.MaxLag)
	}
	if f.DeadlineHHMM != "" {
		if s != "" {
			s += ", "
		}
		s += f.DeadlineLabel()
	}
	return s
}

// sparkline is, for each of the last SparkDays UTC days (oldest first), the
// share of fresh partitions among the partitions whose time window starts
// that day (-1 when there are none). Assets without time partitions show
// their current share every day.
func sparkline(a *catalog.Asset, sp catalog.Space, f *db.StaleFacts, now time.Time) []float64 {
	out := make([]float64, SparkDays)
	ts, dim, ok := catalog.SchemeTimeDim(a.Scheme)
	n := sp.Len()
	if !ok || n == 0 {
		share := -1.0
		if n > 0 {
			share = float64(f.Health(0, n-1, now).Fresh) / float64(n)
		}
		for i := range out {
			out[i] = share
		}
		return out
	}
	stride := int64(1)
	if dim >= 0 {
		if ms, ok := sp.(catalog.MultiSpace); ok {
			stride = ms.Strides()[dim]
		}
	}
	today := now.UTC().Truncate(24 * time.Hour)
	for d := range SparkDays {
		day := today.AddDate(0, 0, d-SparkDays+1)
		lo := ts.IndexAt(day)
		if ts.WindowStart(lo).Before(day) {
			lo++
		}
		hi := ts.IndexAt(day.Add(24*time.Hour - time.Nanosecond))
		lo, hi = max(lo*stride, 0), min((hi+1)*stride-1, n-1)
		if hi < lo {
			// A coarser window (week, month) containing the day.
			i := ts.IndexAt(day)
			lo, hi = max(i*stride, 0), min((i+1)*stride-1, n-1)
		}
		if hi < lo {
			out[d] = -1
			continue
		}
		out[d] = float64(f.Health(lo, hi, now).Fresh) / float64(hi-lo+1)
	}
	return out
}

// Bounds of the board's refresh period (seconds; 0 turns it off).
const (
	defaultBoardRefresh = 30
	minBoardRefresh     = 5
	maxBoardRefresh     = 3600
)

// boardRefresh reads the board's ?refresh= (seconds between reloads on a
// wall screen): empty is the default, 0 is off.
func boardRefresh(q string) (int, error) {
	if q == "" {
		return defaultBoardRefresh, nil
	}
	n, err := strconv.Atoi(q)
	if err != nil || (n != 0 && (n < minBoardRefresh || n > maxBoardRefresh)) {
		return 0, BadRequest("refresh", "refresh must be a number of seconds from %d to %d (or 0 for never), e.g. refresh=60; got %q", minBoardRefresh, maxBoardRefresh, q)
	}
	return n, nil
}

// StatusBoard renders the stakeholders' read-only board.
func (h *Handler) StatusBoard(c echo.Context) error {
	refresh, err := boardRefresh(c.QueryParam("refresh"))
	if err != nil {
		return err
	}
	list, now, err := h.statusBoard(c.Request().Context())
	if err != nil {
		return err
	}
	b := views.StatusBoard{Generated: fmtTime(zoneOfC(c), now), Refresh: refresh, Self: "/status"}
	if c.QueryParam("refresh") != "" {
		b.Self += "?refresh=" + strconv.Itoa(refresh)
	}
	gi := map[string]int{}
	for _, s := range list {
		i, ok := gi[s.Group]
		if !ok {
			i = len(b.Groups)
			gi[s.Group] = i
			b.Groups = append(b.Groups, views.StatusGroup{Name: s.Group})
		}
		row := views.StatusRow{Key: s.Key, Group: s.Group, Href: AssetHref(s.Key) + "?view=staleness", BadgeHref: "/status/" + s.Key + "/badge.svg",
			Partitions: s.Partitions, Fresh: s.Fresh, Stale: s.Stale, Failed: s.Failed, InProgress: s.InProgress, Missing: s.Missing, FreshPct: views.Pct(s.Fresh, s.Partitions),
			LatestFresh: s.LatestFresh, Policy: s.Policy, OverPolicy: s.OverPolicy, Badge: s.Badge, Spark: s.Spark}
		if row.LatestFresh == "" {
			row.LatestFresh = "none"
		}
		switch {
		case s.ended:
			row.Lag, row.Ended = "none", true
		case s.LagSeconds != nil:
			row.Lag = fmtDur(time.Duration(*s.LagSeconds) * time.Second)
		default:
			row.Lag = "—"
		}
		for _, r := range staleReasons() {
			if k := s.ByReason[string(r)]; k > 0 {
				row.ByReason = append(row.ByReason, views.Seg{Status: string(r), N: k})
			}
		}
		b.Groups[i].Assets = append(b.Groups[i].Assets, row)
	}
	return render(c, http.StatusOK, views.StatusBoardPage(page(c, "Data status", "status"), b))
}

// StatusJSON exports the status board.
func (h *Handler) StatusJSON(c echo.Context) error {
	list, now, err := h.statusBoard(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"generated_at": apiTime(now), "assets": list})
}

// StatusCSV exports the status board as CSV, one row per asset.
func (h *Handler) StatusCSV(c echo.Context) error {
	list, _, err := h.statusBoard(c.Request().Context())
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	c.Response().Header().Set("Content-Disposition", `attachment; filename="tessera-status.csv"`)
	c.Response().WriteHeader(http.StatusOK)
	w := csv.NewWriter(c.Response())
	head := []string{"asset", "group", "partitions", "fresh", "stale", "failed", "in_progress", "missing", "last_attempt_failed", "fresh_share"}
	for _, r := range staleReasons() {
		head = append(head, string(r))
	}
	head = append(head, "latest_fresh_partition", "lag_seconds", "freshness_policy", "over_policy", "failing", "badge")
	if err := w.Write(head); err != nil {
		return err
	}
	for _, s := range list {
		row := []string{csvSafe(s.Key), csvSafe(s.Group), fmt.Sprint(s.Partitions), fmt.Sprint(s.Fresh), fmt.Sprint(s.Stale),
			fmt.Sprint(s.Failed), fmt.Sprint(s.InProgress), fmt.Sprint(s.Missing), fmt.Sprint(s.LastFailed), strconv.FormatFloat(s.FreshShare, 'f', 4, 64)}
		for _, r := range staleReasons() {
			row = append(row, fmt.Sprint(s.ByReason[string(r)]))
		}
		lag := ""
		if s.LagSeconds != nil {
			lag = fmt.Sprint(*s.LagSeconds)
		}
		row = append(row, csvSafe(s.LatestFresh), lag, s.Policy, strconv.FormatBool(s.OverPolicy), strconv.FormatBool(s.Failing), s.Badge)
		if err := w.Write(row); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}

// csvSafe keeps spreadsheet formulas out of exported cells.
func csvSafe(s string) string {
	if s != "" && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@') {
		return "'" + s
	}
	return s
}

// StatusBadge renders an asset's SVG badge: "failing", "stale N",
// "missing N" or "fresh" (the first that holds).
func (h *Handler) StatusBadge(c echo.Context) error {
	ctx := c.Request().Context()
	ws := h.Workspace()
	a := ws.Asset(pathParam(c, "key"))
	if a == nil {
		return assetNotFound(pathParam(c, "key"), ws.Source)
	}
	sc, err := h.staleCtx(ctx)
	if err != nil {
		return err
	}
	st, err := h.assetStatus(ctx, sc, a, a.Group)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-cache, max-age=0")
	return c.Blob(http.StatusOK, "image/svg+xml; charset=utf-8", badgeSVG(a.Key, st.Badge))
}

// badgeSVG draws a two-part badge; the state is in text (and the colour).
func badgeSVG(label, state string) []byte {
	color := "#2f9e5e"
	switch {
	case state == "failing":
		color = "#d14343"
	case state != "fresh":
		color = "#b15c00"
	}
	cw := func(s string) int { return 7*len([]rune(s)) + 12 }
	lw, rw := cw(label), cw(state)
	l, s := html.EscapeString(label), html.EscapeString(state)
	return fmt.Appendf(nil, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="20" role="img" aria-label="%s: %s"><title>%s: %s</title>`+
		`<rect width="%d" height="20" fill="#555"/><rect x="%d" width="%d" height="20" fill="%s"/>`+
		`<g fill="#fff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11" text-anchor="middle">`+
		`<text x="%d" y="14">%s</text><text x="%d" y="14" data-state="%s">%s</text></g></svg>`,
		lw+rw, l, s, l, s, lw, lw, rw, color, lw/2, l, lw+rw/2, s, s)
}

// Pct is a share as the pages write it (views.Pct: rounded down, "<1%"
// for a share above zero), for the CLI to write the same number.
func Pct(part, total int64) string { return views.Pct(part, total) }
