package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// staleCtx resolves every asset's partition space once per request for the
// staleness computations.
type staleCtx struct {
	in      db.StaleInput
	spaces  map[*catalog.Asset]catalog.Space
	now     time.Time
	version int64 // data version, synced once per request
}

func (h *Handler) staleCtx(ctx context.Context) (*staleCtx, error) {
	sc, err := h.staleSpaces(ctx)
	if err != nil {
		return nil, err
	}
	if sc.version, err = h.Store.SyncStaleness(ctx, sc.in); err != nil {
		return nil, err
	}
	return sc, nil
}

// staleSpaces is staleCtx without the sync of the memoized facts (version
// 0): enough for one partition's staleness, which reads the store directly.
func (h *Handler) staleSpaces(ctx context.Context) (*staleCtx, error) {
	ws := h.Workspace()
	dyn, err := h.Store.LoadDynamicKeys(ctx)
	if err != nil {
		return nil, err
	}
	now := h.Now()
	sc := &staleCtx{spaces: make(map[*catalog.Asset]catalog.Space, len(ws.Assets)), now: now}
	for _, a := range ws.Assets {
		sc.spaces[a] = a.Scheme.Space(now, dyn)
	}
	// Pages may show a running backfill's progress up to db.PageStaleLag
	// late (any other change at once): their many viewers then share one
	// computation of an asset's facts per lag, not one per controller step.
	sc.in = db.StaleInput{WS: ws.Workspace, IDs: ws.IDs, MaxLag: db.PageStaleLag, SpaceOf: func(a *catalog.Asset) catalog.Space {
		if sp, ok := sc.spaces[a]; ok {
			return sp
		}
		return a.Scheme.Space(now, dyn)
	}}
	return sc, nil
}

func (h *Handler) staleFacts(ctx context.Context, sc *staleCtx, a *catalog.Asset) (*db.StaleFacts, error) {
	return h.Store.StaleFactsAt(ctx, sc.in, a, sc.version)
}

// assetFacts is the staleness context of now and asset a's facts in it.
func (h *Handler) assetFacts(ctx context.Context, a *catalog.Asset) (*staleCtx, *db.StaleFacts, error) {
	sc, err := h.staleCtx(ctx)
	if err != nil {
		return nil, nil, err
	}
	f, err := h.staleFacts(ctx, sc, a)
	return sc, f, err
}

// WarmStaleness computes every asset's staleness facts once, so that the
// first pages after a start (overview, status board, asset pages) do not pay
// for loading them cold; serve runs it in the background.
func (h *Handler) WarmStaleness(ctx context.Context) error {
	sc, err := h.staleCtx(ctx)
	if err != nil {
		return err
	}
	return h.warmFacts(ctx, sc, max(runtime.NumCPU(), 1))
}

// warmFacts computes (or finds memoized) the facts of every asset with
// workers goroutines, upstreams first. A request computes with one: it holds
// one read slot (web's read_slots.go), which stands for one core, and the
// engine keeps the others; with a worker per CPU, the overview and the
// status board each took two cores beside a running backfill, which then
// ran at 0.70 of its speed alone instead of 0.73 (tessera bench mixed,
// alternating). WarmStaleness, run in the background at a start when no
// backfill has begun, uses one per CPU.
func (h *Handler) warmFacts(ctx context.Context, sc *staleCtx, workers int) error {
	order := h.Workspace().TopoOrder()
	if workers <= 1 {
		for _, a := range order {
			if _, err := h.staleFacts(ctx, sc, a); err != nil {
				return err
			}
		}
		return nil
	}
	work := make(chan *catalog.Asset)
	errs := make(chan error, len(order))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range work {
				if _, err := h.staleFacts(ctx, sc, a); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, a := range order {
		work <- a
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

// reasonBar turns reason counts into a bar in legend order.
func reasonBar(c db.ReasonCounts) views.Bar {
	b := views.Bar{}
	for _, r := range views.ReasonOrder {
		n := c[catalog.StaleReason(r)]
		b.Segs = append(b.Segs, views.Seg{Status: r, N: n})
		b.Total += n
	}
	return b
}

// healthReasonBar draws health counts by staleness reason, in legend
// order: fresh, never materialized (failed and missing), each reason of the
// stale, and the partitions in progress when there are any. Its segments
// add up to the health bar's.
func healthReasonBar(c catalog.HealthCounts) views.Bar {
	b := views.Bar{}
	for _, r := range views.ReasonOrder {
		var n int64
		switch catalog.StaleReason(r) {
		case catalog.Fresh:
			n = c.Fresh
		case catalog.NeverMaterialized:
			n = c.NeverMaterialized()
		default:
			n = c.StaleBy[catalog.StaleReason(r)]
		}
		b.Segs = append(b.Segs, views.Seg{Status: r, N: n})
		b.Total += n
	}
	if c.InProgress > 0 {
		b.Segs = append(b.Segs, views.Seg{Status: db.StatusInProgress, N: c.InProgress})
		b.Total += c.InProgress
	}
	return b
}

// withStale splits the health bar's materialized segment into fresh and
// stale ("stale": materialized, but stale for a reason other than never
// materialized).
func withStale(b views.Bar, stale int64) views.Bar {
	out := views.Bar{Total: b.Total}
	for _, s := range b.Segs {
		if s.Status == db.StatusMaterialized {
			stale = min(stale, s.N)
			out.Segs = append(out.Segs, views.Seg{Status: s.Status, N: s.N - stale}, views.Seg{Status: views.SegStale, N: stale})
			continue
		}
		out.Segs = append(out.Segs, s)
	}
	return out
}

// backfillHref opens the new-backfill page preselected for asset with a
// selection (the page's selector field: "stale", "missing_stale").
func backfillHref(asset, selector string) string {
	q := url.Values{}
	q.Set("asset", asset)
	q.Set("selector", selector)
	return "/backfills/new?" + q.Encode()
}

// stalePanel fills the asset page's staleness summary.
func (h *Handler) stalePanel(ctx context.Context, a assetCtx, f *db.StaleFacts, now time.Time) (*views.StalePanel, error) {
	c := f.Health(0, a.Space.Len()-1, now)
	p := &views.StalePanel{Counts: healthReasonBar(c), Stale: c.Stale, Failed: c.Failed, Missing: c.Missing, InProgress: c.InProgress}
	// The shortcuts are offered only when their selection is not empty:
	// "Backfill stale" selects the stale partitions (their data is there
	// but out of date), "missing and stale" adds those without data.
	if c.Stale+c.NeverMaterialized() > 0 {
		p.BackfillMissingStale = backfillHref(a.Def.Key, "missing_stale")
	}
	if c.Stale > 0 {
		p.BackfillStale = backfillHref(a.Def.Key, "stale")
	}
	if w, err := h.Store.GetWatermark(ctx, a.ID); err == nil {
		p.Watermark = w.Partition
	} else if !errors.Is(err, db.ErrNotFound) {
		return nil, err
	}
	return p, nil
}

// staleTileGrid draws [lo, hi] as tiles coloured by staleness reason.
func staleTileGrid(a assetCtx, l gridLayout, lo, hi int64, f *db.StaleFacts, filter string, now time.Time) views.Grid {
	g := views.Grid{Mode: l.mode, Columns: l.columns, ColumnLabels: l.labels, Total: hi - lo + 1}
	if l.mode == "list" {
		g.Rows = []views.GridRow{{}}
	}
	keys := a.Space.Keys(lo, hi-lo+1)
	for j, key := range keys {
		i := lo + int64(j)
		r := f.Reason(i, now)
		t := views.Tile{Key: key, Status: string(r), Href: PartitionHref(a.Def.Key, key), Title: staleTitle(a, f, i, key, r), Pos: i + 1}
		t.Dim = filter != "" && t.Status != filter
		if l.mode == "list" {
			g.Rows[0].Tiles = append(g.Rows[0].Tiles, t)
			continue
		}
		label, col := l.rowOf(a, i)
		if len(g.Rows) == 0 || g.Rows[len(g.Rows)-1].Label != label {
			g.Rows = append(g.Rows, views.GridRow{Label: label})
			t.Col = col
		}
		row := &g.Rows[len(g.Rows)-1]
		row.Tiles = append(row.Tiles, t)
	}
	slices.Reverse(g.Rows)
	return g
}

func staleTitle(a assetCtx, f *db.StaleFacts, i int64, key string, r catalog.StaleReason) string {
	s := key + " · " + views.ReasonLabel(string(r))
	switch r {
	case catalog.CodeChanged:
		s += ": built with " + f.CodeVersionAt(i) + ", now " + a.Def.CodeVersion
	case catalog.UpstreamChanged:
		u := f.Upstream(i)
		s += ": " + u.Asset + " " + u.Key + " materialized " + fmtMs(a.zone(), u.MatAt)
	case catalog.FreshnessLate:
		s += ": stale since " + fmtMs(a.zone(), f.StaleFromAt(i))
	case catalog.Fresh:
		s += ": materialized " + fmtMs(a.zone(), f.MatAtOf(i))
	}
	return s
}

// fmtMs is fmtMinute of a stored time ("" for 0).
func fmtMs(loc *time.Location, ms int64) string {
	if ms == 0 {
		return ""
	}
	return fmtMinute(loc, db.FromMillis(ms))
}

// staleBucketGrid draws [lo, hi] as about n buckets of reason counts.
func staleBucketGrid(a assetCtx, lo, hi, n int64, f *db.StaleFacts, filter string, cur [2]int64, q url.Values, now time.Time) views.Grid {
	total := hi - lo + 1
	size := max((total+n-1)/n, 1)
	g := views.Grid{Mode: "buckets", BucketSize: size, Total: total}
	for b, c := range f.BucketCounts(lo, hi, size, now) {
		from := lo + int64(b)*size
		to := min(from+size-1, hi)
		bar := reasonBar(c)
		if filter != "" {
			k := c[catalog.StaleReason(filter)]
			bar = views.Bar{Segs: []views.Seg{{Status: filter, N: k}, {Status: "other", N: bar.Total - k}}, Total: bar.Total}
		}
		bucketGridBuilder{&g}.addBucket(a, from, to, bar, cur, q)
	}
	return g
}

// relatedPartitions lists the partitions of other (index ranges of its
// space) with their statuses: each one when there are at most limit.
func (h *Handler) relatedPartitions(ctx context.Context, other *catalog.Asset, sp catalog.Space, id int64, mapping string, rs []catalog.IndexRange, limit int64) (views.DepPartitions, error) {
	d := views.DepPartitions{Asset: other.Key, AssetHref: AssetHref(other.Key), Mapping: mapping}
	n := catalog.CountRanges(rs)
	if n == 0 {
		d.Summary = "no partitions"
		return d, nil
	}
	d.Summary = fmt.Sprintf("%s partition%s: %s", views.Num(n), plural(n), keySpan(sp.Key(rs[0].Lo), sp.Key(rs[len(rs)-1].Hi)))
	shown := int64(0)
	for _, r := range rs {
		if shown >= limit {
			break
		}
		hi := min(r.Hi, r.Lo+limit-shown-1)
		rows, err := h.Store.StatusRange(ctx, id, r.Lo, hi)
		if err != nil {
			return d, err
		}
		byIdx := map[int64]string{}
		for _, row := range rows {
			byIdx[row.Idx] = row.Status
		}
		for i := r.Lo; i <= hi; i++ {
			st := byIdx[i]
			if st == "" {
				st = db.StatusMissing
			}
			k := sp.Key(i)
			d.Parts = append(d.Parts, views.PartLink{Key: k, Href: PartitionHref(other.Key, k), Status: st})
			shown++
		}
	}
	if n > shown {
		d.More = n - shown
		q := url.Values{}
		d.RangeHref = AssetHref(other.Key) + rangeHref(q, sp.Key(rs[0].Lo), sp.Key(rs[len(rs)-1].Hi))
	}
	return d, nil
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// partitionStaleness adds staleness, related partitions and taint actions to
// the partition page.
func (h *Handler) partitionStaleness(c echo.Context, a assetCtx, key string, v *views.PartitionPage) error {
	ctx := c.Request().Context()
	s, sc, err := h.partitionStalenessNow(ctx, a, key)
	if err != nil {
		return err
	}
	v.Staleness = views.StalenessView{Reason: string(s.Reason), Evidence: s.EvidenceIn(zoneOfC(c))}
	if s.Since != 0 {
		v.Staleness.Since = fmtMs(zoneOfC(c), s.Since)
	}
	ws := h.Workspace()
	for _, dep := range a.Def.Deps {
		up := ws.Asset(dep.Asset)
		if up == nil {
			continue
		}
		usp := sc.in.SpaceOf(up)
		rs, err := catalog.UpstreamOf(dep, a.Def.Scheme, a.Space, up.Scheme, usp, key)
		if err != nil {
			return err
		}
		d, err := h.relatedPartitions(ctx, up, usp, ws.IDs[up.Key], string(catalog.ResolveMapping(dep.Mapping, a.Def.Scheme, up.Scheme)), rs, 48)
		if err != nil {
			return err
		}
		v.Upstream = append(v.Upstream, d)
	}
	for _, down := range ws.Dependents(a.Def.Key) {
		dsp := sc.in.SpaceOf(down)
		for _, dep := range down.Deps {
			if dep.Asset != a.Def.Key {
				continue
			}
			rs, err := catalog.DownstreamOf(dep, down.Scheme, dsp, a.Def.Scheme, a.Space, key)
			if err != nil {
				return err
			}
			d, err := h.relatedPartitions(ctx, down, dsp, ws.IDs[down.Key], string(catalog.ResolveMapping(dep.Mapping, down.Scheme, a.Def.Scheme)), rs, 48)
			if err != nil {
				return err
			}
			v.Downstream = append(v.Downstream, d)
		}
	}
	taints, err := h.Store.Taints(ctx, a.ID, key)
	if err != nil {
		return err
	}
	for _, t := range taints {
		row := views.TaintRow{Instance: deref(t.InstanceID), Reason: t.Reason, Actor: t.Actor, At: fmtStamp(zoneOfC(c), &t.TaintedAt)}
		if t.ClearedAt != nil {
			row.Cleared = fmtStamp(zoneOfC(c), t.ClearedAt) + " by " + deref(t.ClearedBy)
		}
		v.Taints = append(v.Taints, row)
	}
	if p := CurrentPrincipal(c); p != nil && p.Role >= auth.RoleAdmin {
		v.CanTaint = true
	}
	base := PartitionHref(a.Def.Key, key)
	v.TaintAction, v.ClearAction = base+"/taint", base+"/clear-taint"
	v.HistoryAPI = "/api/v1" + base + "/history"
	return nil
}

// isAPI reports whether the request came to the JSON API.
func isAPI(c echo.Context) bool { return strings.HasPrefix(c.Request().URL.Path, "/api/") }

// inputValue reads a field from a form (pages) or, on the API, from the
// JSON body, decoded as strictly as every other API body into T (a struct
// of that one field, which get returns; nil when left out): a field T does
// not have is a 400 naming it, as elsewhere. "" when the field is left out.
func inputValue[T any](c echo.Context, field string, get func(*T) *string) (string, error) {
	if !isAPI(c) {
		return c.FormValue(field), nil
	}
	raw, err := readBody(c)
	if err != nil {
		return "", err
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return "", BadRequest("", "the request body is empty; send a JSON object like {%q: \"...\"}", field)
	}
	var body T
	if err := decodeStrictBody(raw, &body, false); err != nil {
		if ue, ok := err.(*UserError); ok && ue.Field == "" {
			ue.Message += fmt.Sprintf("; send a JSON object like {%q: \"...\"}", field)
		}
		return "", err
	}
	if v := get(&body); v != nil {
		return *v, nil
	}
	return "", nil
}

// taintBody is the API body of a taint: {"reason": "..."}.
type taintBody struct {
	Reason *string `json:"reason"`
}

// partitionArg resolves the asset and partition of a partition route.
func (h *Handler) partitionArg(c echo.Context) (assetCtx, string, error) {
	a, err := h.routeAsset(c)
	if err != nil {
		return a, "", err
	}
	key := pathParam(c, "partition")
	if _, err := a.Space.Index(key); err != nil {
		ue := NotFound("")
		ue.Page = err.Error()
		return a, "", withHint(ue, err.Error(), HintAssetPartitions, map[string]string{"asset": a.Def.Key})
	}
	return a, key, nil
}

// TaintPartition marks a partition tainted (admin). Form field or JSON
// "reason" is required.
func (h *Handler) TaintPartition(c echo.Context) error {
	a, key, err := h.partitionArg(c)
	if err != nil {
		return err
	}
	reason, err := inputValue(c, "reason", func(b *taintBody) *string { return b.Reason })
	if err != nil {
		return err
	}
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return BadRequest("reason", "a taint needs a reason: say why this partition's data is wrong")
	}
	if err := validText("reason", "the reason", reason, 500); err != nil {
		return err
	}
	err = h.Store.Taint(c.Request().Context(), a.ID, a.Def.Key, key, reason, Actor(c), h.Now())
	if errors.Is(err, db.ErrNotFound) {
		return Conflict("partition %s of %s has never been materialized, so there is nothing to taint", key, a.Def.Key)
	}
	if err != nil {
		return err
	}
	return h.afterTaint(c, a, key)
}

// ClearTaint removes a partition's taint (admin).
func (h *Handler) ClearTaint(c echo.Context) error {
	a, key, err := h.partitionArg(c)
	if err != nil {
		return err
	}
	if isAPI(c) {
		// No fields: {} or no body; anything else was meant for another
		// request.
		if err := decodeStrict(c, &struct{}{}, true); err != nil {
			return err
		}
	}
	err = h.Store.ClearTaint(c.Request().Context(), a.ID, a.Def.Key, key, Actor(c), h.Now())
	if errors.Is(err, db.ErrNotFound) {
		return Conflict("partition %s of %s is not tainted", key, a.Def.Key)
	}
	if err != nil {
		return err
	}
	return h.afterTaint(c, a, key)
}

func (h *Handler) afterTaint(c echo.Context, a assetCtx, key string) error {
	if !isAPI(c) {
		return c.Redirect(http.StatusSeeOther, PartitionHref(a.Def.Key, key))
	}
	return h.partitionStalenessJSON(c, a, key)
}

// partitionStalenessJSON answers one partition's staleness, read from the
// store (no sync of the memoized facts: see staleSpaces).
func (h *Handler) partitionStalenessJSON(c echo.Context, a assetCtx, key string) error {
	s, _, err := h.partitionStalenessNow(c.Request().Context(), a, key)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"asset": a.Def.Key, "partition": key, "staleness": s})
}

// partitionStalenessNow reads one partition's staleness from the store as
// of now, with the spaces it was read in (see staleSpaces).
func (h *Handler) partitionStalenessNow(ctx context.Context, a assetCtx, key string) (catalog.Staleness, *staleCtx, error) {
	sc, err := h.staleSpaces(ctx)
	if err != nil {
		return catalog.Staleness{}, nil, err
	}
	s, err := h.Store.PartitionStalenessAt(ctx, sc.in, a.Def, key, sc.now, sc.version)
	return s, sc, err
}

// InstanceJSON is a partition instance in the API.
type InstanceJSON struct {
	ID           string          `json:"id"`
	RunID        string          `json:"run_id"`
	Status       string          `json:"status"`
	CodeVersion  string          `json:"code_version"`
	Source       string          `json:"source"`
	StartedAt    *string         `json:"started_at,omitempty"`
	FinishedAt   *string         `json:"finished_at,omitempty"`
	Metadata     json.RawMessage `json:"metadata,omitempty"`
	Error        string          `json:"error,omitempty"`
	SupersedesID string          `json:"supersedes_id,omitempty"`
}

func instanceJSON(i *db.Instance) *InstanceJSON {
	if i == nil {
		return nil
	}
	out := &InstanceJSON{ID: i.ID, RunID: i.RunID, Status: i.Status, CodeVersion: i.CodeVersion, Source: i.Source,
		Error: deref(i.Error), SupersedesID: deref(i.SupersedesID)}
	out.StartedAt, out.FinishedAt = msTimePtr(i.StartedAt), msTimePtr(i.FinishedAt)
	if m := deref(i.Metadata); m != "" && json.Valid([]byte(m)) {
		out.Metadata = json.RawMessage(m)
	}
	return out
}

// parseAt reads a point in time: RFC 3339, "2006-01-02T15:04[:05]" or
// "2006-01-02 15:04[:05]" (UTC), a date (UTC midnight), or Unix milliseconds.
func parseAt(s string) (time.Time, error) {
	t, err := parseAtAny(s)
	if err == nil && (t.Year() < 1 || t.Year() > 9999) {
		return time.Time{}, fmt.Errorf("%q is out of range: use a time between the years 1 and 9999", strings.TrimSpace(s))
	}
	return t, err
}

func parseAtAny(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, fmt.Errorf("empty time")
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil && len(s) >= 10 {
		return time.UnixMilli(ms).UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("cannot read %q as a time", s)
}

// APIPartitionHistory answers what a partition's instance was at a time
// (?at=TIME), or lists every instance when at is absent.
func (h *Handler) APIPartitionHistory(c echo.Context) error {
	a, key, err := h.partitionArg(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if raw := c.QueryParam("at"); raw != "" {
		at, err := parseAt(raw)
		if err != nil {
			return BadRequest("at", "%s; use RFC 3339 like 2025-01-15T12:00:00Z, \"2025-01-15 12:00\" (UTC), a date, or Unix milliseconds", err.Error())
		}
		hist, err := h.Store.PartitionHistoryAt(ctx, a.ID, key, at)
		if err != nil {
			return err
		}
		out := map[string]any{"asset": a.Def.Key, "partition": key, "at": apiTime(at),
			"instance": instanceJSON(hist.Canonical), "last_attempt": instanceJSON(hist.LastAttempt), "tainted": hist.Taint != nil}
		if hist.Taint != nil {
			out["taint_reason"] = hist.Taint.Reason
		}
		if hist.Canonical == nil {
			out["message"] = "no successful instance of this partition existed at that time"
		}
		return c.JSON(http.StatusOK, out)
	}
	before, limit, err := listPage(c, parseLimit, nil, decodeInstanceCursor)
	if err != nil {
		return err
	}
	insts, err := h.Store.InstancesBefore(ctx, a.ID, key, before, limit+1)
	if err != nil {
		return err
	}
	insts, next := pageOf(insts, limit, func(last db.Instance) string {
		p := last.Pos()
		return encodeCursorParts("ih", strconv.FormatInt(p.CreatedAt, 10), strconv.FormatInt(p.SortAt, 10), p.ID)
	})
	list := make([]*InstanceJSON, 0, len(insts))
	for i := range insts {
		list = append(list, instanceJSON(&insts[i]))
	}
	return c.JSON(http.StatusOK, map[string]any{"asset": a.Def.Key, "partition": key, "instances": list, "next_cursor": next})
}

// decodeInstanceCursor reads a cursor of a partition's history.
func decodeInstanceCursor(s string) (*db.InstancePos, error) {
	parts, err := decodeCursorParts(s, "ih", 3)
	if err != nil {
		return nil, err
	}
	created, err1 := strconv.ParseInt(parts[0], 10, 64)
	sortAt, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || parts[2] == "" {
		return nil, badCursor(s)
	}
	return &db.InstancePos{CreatedAt: created, SortAt: sortAt, ID: parts[2]}, nil
}

// APIAssetStaleness returns an asset's counts per reason, and with
// ?partition=KEY one partition's reason and evidence.
func (h *Handler) APIAssetStaleness(c echo.Context) error {
	ctx := c.Request().Context()
	a, err := h.routeAsset(c)
	if err != nil {
		return err
	}
	if key := c.QueryParam("partition"); key != "" {
		if _, err := a.Space.Index(key); err != nil {
			return BadRequest("partition", "%s", err.Error())
		}
		return h.partitionStalenessJSON(c, a, key)
	}
	sc, f, err := h.assetFacts(ctx, a.Def)
	if err != nil {
		return err
	}
	hc := f.Health(0, a.Space.Len()-1, sc.now)
	by := map[string]int64{}
	for _, s := range healthReasonBar(hc).Segs {
		if s.Status != db.StatusInProgress {
			by[s.Status] = s.N
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"asset": a.Def.Key, "partitions": a.Space.Len(),
		"fresh": hc.Fresh, "stale": hc.Stale, "failed": hc.Failed, "in_progress": hc.InProgress, "missing": hc.Missing,
		"last_attempt_failed": hc.LastAttemptFailed, "by_reason": by})
}
