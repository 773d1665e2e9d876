package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/oklog/ulid/v2"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/views"
)

// MaxFormKeys bounds the explicit key list pasted into the form.
const MaxFormKeys = 100_000

// formFromValues reads the new-backfill form (or the query prefilling it).
func (h *Handler) formFromValues(c echo.Context, get func(string) string, list func(string) []string) views.NewBackfillForm {
	f := views.NewBackfillForm{Selector: get("selector"), Start: strings.TrimSpace(get("start")), End: strings.TrimSpace(get("end")),
		Keys: get("keys"), Dimension: strings.TrimSpace(get("dimension")), ChunkSize: strings.TrimSpace(get("chunk_size")),
		MaxConcurrent: strings.TrimSpace(get("max_concurrent_runs")), Priority: strings.TrimSpace(get("priority")),
		Title: strings.TrimSpace(get("title")), IdempotencyKey: get("idempotency_key"), Errors: map[string]string{},
		CanLaunch: canOperate(c)}
	if CurrentPrincipal(c).Anonymous() {
		f.SignIn = signInHref(c, "/backfills/new")
	}
	if f.ChunkSize == "" {
		f.ChunkSize = strconv.Itoa(jobs.DefaultChunkSize)
	}
	if f.MaxConcurrent == "" {
		f.MaxConcurrent = strconv.Itoa(jobs.DefaultMaxConcurrentRuns)
	}
	if f.Priority == "" {
		f.Priority = "0"
	}
	if f.IdempotencyKey == "" {
		f.IdempotencyKey = "bfk_" + strings.ToLower(ulid.Make().String())
	}
	// The statuses of "Only partitions that are", in the form's order,
	// each once; unknown ones are kept to be refused (statusFilter).
	for _, st := range list("status") {
		if st = strings.TrimSpace(st); st != "" && !slices.Contains(f.Statuses, st) {
			f.Statuses = append(f.Statuses, st)
		}
	}
	slices.SortStableFunc(f.Statuses, func(a, b string) int { return statusOrder(a) - statusOrder(b) })
	if f.Selector == "" && len(f.Statuses) > 0 {
		// An address with status= and no selector= means the statuses.
		f.Selector = "statuses"
	}
	if st, ok := views.SelectorAliases[f.Selector]; ok {
		// A selection of the form's earlier choices (links, bookmarks):
		// its statuses, ticked.
		f.Selector = "statuses"
		if len(f.Statuses) == 0 {
			f.Statuses = slices.Clone(st)
		}
	}
	// Per-asset chunk sizes: chunk_size.ASSET, kept as posted.
	for _, a := range h.Workspace().Assets {
		if v := strings.TrimSpace(get("chunk_size." + a.Key)); v != "" {
			if f.ChunkSizes == nil {
				f.ChunkSizes = map[string]string{}
			}
			f.ChunkSizes[a.Key] = v
		}
	}
	checked := map[string]bool{}
	for _, a := range list("asset") {
		checked[a] = true
	}
	upstream := map[string]bool{}
	ws := h.Workspace()
	// Names that are no asset are kept to be reported, not dropped.
	known := make(map[string]bool, len(ws.Assets))
	for _, a := range ws.Assets {
		known[a.Key] = true
	}
	for _, a := range list("asset") {
		if a = strings.TrimSpace(a); a != "" && !known[a] && !slices.Contains(f.UnknownAssets, a) {
			f.UnknownAssets = append(f.UnknownAssets, a)
		}
	}
	for _, a := range ws.Assets {
		if checked[a.Key] {
			for _, d := range a.Deps {
				upstream[d.Asset] = true
			}
		}
	}
	for _, a := range ws.Assets {
		f.Assets = append(f.Assets, views.AssetChoice{Key: a.Key, Scheme: a.Scheme.Describe(), Checked: checked[a.Key], Upstream: upstream[a.Key] && !checked[a.Key]})
	}
	// Every multi-dimensional asset's values, so that ticking another
	// asset needs no new list; an error leaves the picker a text box.
	var err error
	if f.DimensionChoices, f.DimensionsComplete, err = h.dimensionChoices(c.Request().Context(), ws.Assets); err != nil {
		f.DimensionChoices, f.DimensionsComplete = nil, false
	}
	return f
}

// requestFromForm turns the form into an engine request; bad numbers are
// reported against their field. "Fill gaps" resolves the asset's gaps below
// its watermark (the same search as the gaps API and CLI) into their keys.
func (h *Handler) requestFromForm(c echo.Context, f views.NewBackfillForm) (jobs.Request, *Gaps, error) {
	req, err := requestFromForm(f)
	if err != nil || f.Selector != "gaps" {
		return req, nil, err
	}
	if len(req.Assets) != 1 {
		return req, nil, BadRequest("assets", "Fill gaps works on one asset at a time: pick exactly one")
	}
	g, err := h.FindGaps(c.Request().Context(), req.Assets[0], f.Start)
	if err != nil {
		var ue *UserError
		if errors.As(err, &ue) && ue.Field == "from" {
			ue.Field, ue.Message = "start", gapsFormWords(ue.Message)
		}
		return req, nil, err
	}
	g.Note = gapsFormWords(g.Note)
	switch {
	case g.Skipped:
		return req, &g, BadRequest("selector", "%s", g.Warning)
	case g.Total == 0 && g.Note != "":
		return req, &g, BadRequest("selector", "no gaps to fill: %s", g.Note)
	case g.Total == 0:
		return req, &g, BadRequest("selector", "no gaps to fill: nothing is missing below the watermark %s", g.Watermark)
	case g.Total > MaxFormKeys:
		return req, &g, BadRequest("selector", "%d missing partitions below the watermark; the form fills at most %d at once (set Start to a later key, or use the API)", g.Total, MaxFormKeys)
	}
	a, err := h.asset(c.Request().Context(), req.Assets[0])
	if err != nil {
		return req, nil, err
	}
	keys := make([]string, 0, g.Total)
	for _, r := range g.Ranges {
		keys = append(keys, a.Space.Keys(r.Lo, r.Count)...)
	}
	req.Selector = jobs.Selector{Type: "explicit", Keys: keys}
	return req, &g, nil
}

// gapsFormWords says a message of the gap search (whose from is the
// form's Start) in the form's words: the search's API and CLI name "from"
// and "--from KEY".
func gapsFormWords(msg string) string {
	msg = strings.Replace(msg, "use --from KEY to fill from a start", "fill in Start to fill from that key on", 1)
	msg = strings.Replace(msg, "pick a from ", "pick a Start ", 1)
	if rest, ok := strings.CutPrefix(msg, "from "); ok {
		msg = "start " + rest
	}
	return msg
}

// requestFromForm reads every field but the gap search.
func requestFromForm(f views.NewBackfillForm) (jobs.Request, error) {
	req := jobs.Request{Title: f.Title}
	for _, a := range f.Assets {
		if a.Checked {
			req.Assets = append(req.Assets, a.Key)
		}
	}
	if err := unknownAssets(f); err != nil {
		return req, err
	}
	if len(req.Assets) == 0 {
		return req, BadRequest("assets", "tick at least one asset under Assets")
	}
	// num reads a whole number of the field labelled label within [lo, hi];
	// one too large for int64 is a whole number out of range too.
	num := func(field, label, v string, lo, hi int64) (int64, error) {
		v = strings.TrimSpace(v)
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, BadRequest(field, "%s must be a whole number, got %q", label, v)
		}
		if err != nil || n < lo || n > hi {
			return 0, BadRequest(field, "%s must be at least %s and at most %s, got %s", label, views.Num(lo), views.Num(hi), v)
		}
		return n, nil
	}
	var err error
	if req.ChunkSize, err = num("chunk_size", "chunk size", f.ChunkSize, 1, jobs.MaxChunkSize); err != nil {
		return req, err
	}
	// An asset's own chunk size counts when the asset is ticked.
	for _, a := range req.Assets {
		if v, ok := f.ChunkSizes[a]; ok {
			n, err := num("chunk_size."+a, "the chunk size of "+a, v, 1, jobs.MaxChunkSize)
			if err != nil {
				return req, err
			}
			if n != req.ChunkSize {
				if req.ChunkSizes == nil {
					req.ChunkSizes = map[string]int64{}
				}
				req.ChunkSizes[a] = n
			}
		}
	}
	if req.MaxConcurrentRuns, err = num("max_concurrent_runs", "max concurrent runs", f.MaxConcurrent, 1, jobs.MaxConcurrentRunsCap); err != nil {
		return req, err
	}
	if req.Priority, err = num("priority", "priority", f.Priority, catalog.MinPriority, catalog.MaxPriority); err != nil {
		return req, err
	}
	sel := jobs.Selector{Start: f.Start, End: f.End}
	if f.Dimension != "" {
		name, value, ok := strings.Cut(f.Dimension, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || value == "" {
			return req, BadRequest("dimension", "write the dimension filter as name=value, for example region=eu (got %q)", f.Dimension)
		}
		sel.Dimensions = map[string][]string{name: {value}}
	}
	switch f.Selector {
	case "", "range":
		sel.Type = "range"
		if sel.Dimensions != nil {
			sel.Type = "filter"
		}
	case "statuses":
		st, err := statusFilter(f.Statuses)
		if err != nil {
			return req, err
		}
		sel.Type, sel.Statuses = "filter", st
	case "gaps":
		sel.Type = "explicit" // resolved by Handler.requestFromForm
	case "explicit":
		sel = jobs.Selector{Type: "explicit"}
		for _, line := range strings.Split(f.Keys, "\n") {
			if k := strings.TrimSpace(line); k != "" {
				sel.Keys = append(sel.Keys, k)
			}
		}
		if len(sel.Keys) == 0 {
			return req, BadRequest("keys", "paste at least one partition key, one a line")
		}
		if len(sel.Keys) > MaxFormKeys {
			return req, BadRequest("keys", "%d keys pasted; the form takes at most %d (use the API for more)", len(sel.Keys), MaxFormKeys)
		}
	default:
		return req, BadRequest("selector", "%s", unknownSelector(f.Selector, ""))
	}
	req.Selector = sel
	return req, nil
}

// statusOrder is the position of status v among views.StatusChoices
// (unknown ones last).
func statusOrder(v string) int {
	for i, c := range views.StatusChoices {
		if c.Value == v {
			return i
		}
	}
	return len(views.StatusChoices)
}

// statusFilter checks the statuses ticked under "Only partitions that are":
// at least one, each one of views.StatusChoices (the filter statuses of
// the API). The messages say it in the form's words.
func statusFilter(ticked []string) ([]string, error) {
	values := make([]string, 0, len(views.StatusChoices))
	words := make([]string, 0, len(views.StatusChoices))
	for _, c := range views.StatusChoices {
		values = append(values, c.Value)
		words = append(words, fmt.Sprintf("%s (%s)", c.Value, c.Hint))
	}
	if len(ticked) == 0 {
		return nil, BadRequest("status", "tick at least one status under %q: %s", choiceLabel("statuses"), strings.Join(words, ", "))
	}
	for _, st := range ticked {
		if !slices.Contains(values, st) {
			return nil, BadRequest("status", "unknown status %q%s; the statuses are %s", st, catalog.Suggest(st, values), strings.Join(words, ", "))
		}
	}
	return slices.Clone(ticked), nil
}

// choiceLabel is what the form calls selection v.
func choiceLabel(v string) string {
	for _, c := range views.SelectorChoices {
		if c.Value == v {
			return c.Label
		}
	}
	return v
}

// unknownSelector says that selection v is none of the form's (then what
// the form does about it, if anything) and which ones there are, as the
// address writes them and as the form names them.
func unknownSelector(v, then string) string {
	values := make([]string, 0, len(views.SelectorChoices)+len(views.SelectorAliases))
	choices := make([]string, 0, len(views.SelectorChoices))
	for _, c := range views.SelectorChoices {
		values = append(values, c.Value)
		choices = append(choices, fmt.Sprintf("%s (%s)", c.Value, c.Label))
	}
	for a := range views.SelectorAliases {
		values = append(values, a) // "stael": did you mean "stale"
	}
	slices.Sort(values[len(views.SelectorChoices):])
	return fmt.Sprintf("unknown selection %q%s%s; the selections are %s", v, catalog.Suggest(v, values), then, strings.Join(choices, ", "))
}

// unknownAssets is the error of asset names (from the address or a posted
// form) that are no asset of the workspace, with the closest name when one
// is near; nil when every name is known.
func unknownAssets(f views.NewBackfillForm) *UserError {
	if len(f.UnknownAssets) == 0 {
		return nil
	}
	names := make([]string, 0, len(f.Assets))
	for _, a := range f.Assets {
		names = append(names, a.Key)
	}
	parts := make([]string, 0, len(f.UnknownAssets))
	for _, u := range f.UnknownAssets {
		parts = append(parts, strconv.Quote(u)+catalog.Suggest(u, names))
	}
	what := "unknown asset "
	if len(parts) > 1 {
		what = "unknown assets "
	}
	return BadRequest("assets", "%s%s: tick the assets to backfill under Assets (every asset is listed on the overview page, by the command tessera asset list and by GET /api/v1/assets)",
		what, strings.Join(parts, ", "))
}

// formField maps an engine field name onto the form's input names.
func formField(field string) string {
	switch {
	case field == "":
		return "form"
	case strings.HasPrefix(field, "assets"):
		return "assets"
	case strings.HasPrefix(field, "selector.keys"):
		return "keys"
	case field == "selector.start":
		return "start"
	case field == "selector.end":
		return "end"
	case strings.HasPrefix(field, "selector.dimensions"):
		return "dimension"
	case strings.HasPrefix(field, "chunk_sizes."):
		return "chunk_size." + strings.TrimPrefix(field, "chunk_sizes.")
	case strings.HasPrefix(field, "chunk_size."):
		return field
	case strings.HasPrefix(field, "selector"):
		return "selector"
	case field == "chunk_size", field == "max_concurrent_runs", field == "priority", field == "title",
		field == "start", field == "end", field == "keys", field == "dimension", field == "status", field == "form":
		return field
	}
	return "form"
}

// setError records err on the form; it returns err when it is not a user error.
func setError(f *views.NewBackfillForm, err error) (int, error) {
	var ue *UserError
	if !errors.As(engineErr(err), &ue) {
		return 0, err
	}
	f.Errors[formField(ue.Field)] = formMessage(*f, ue)
	return ue.Status, nil
}

// formMessage is ue's message for the form: an error about one key of the
// pasted list says which line it is on.
func formMessage(f views.NewBackfillForm, ue *UserError) string {
	var i int
	if _, err := fmt.Sscanf(ue.Field, "selector.keys[%d]", &i); err != nil {
		return ue.Message
	}
	n := -1
	for l, line := range strings.Split(f.Keys, "\n") {
		if strings.TrimSpace(line) != "" { // blank lines are skipped when the list is read
			if n++; n == i {
				return fmt.Sprintf("line %d: %s", l+1, ue.Message)
			}
		}
	}
	return ue.Message
}

// BackfillNew renders /backfills/new, prefilled from the query (the grid's
// "Backfill…" link passes asset, start, end and dimension).
func (h *Handler) BackfillNew(c echo.Context) error {
	q := c.QueryParams()
	f := h.formFromValues(c, q.Get, func(k string) []string { return q[k] })
	if f.Selector != "" && !views.KnownSelector(f.Selector) {
		// The form ticks the default: say so, and preview what it shows.
		f.Errors["selector"] = unknownSelector(f.Selector, " in the address, so "+views.SelectorChoices[0].Label+" is ticked instead")
		f.Selector = views.SelectorChoices[0].Value
	}
	if len(q["asset"]) > 0 {
		// A prefilled form shows on load what pressing Preview would: the
		// preview, or the error next to its field.
		pv, err := h.formPreview(c, f)
		if err != nil {
			return err
		}
		f.Preview = &pv
		if pv.Error != "" && f.Errors[pv.Field] == "" {
			f.Errors[pv.Field] = pv.Error
		}
	}
	return render(c, http.StatusOK, views.BackfillNewPage(page(c, "New backfill", "backfills"), f))
}

func postedForm(h *Handler, c echo.Context) (views.NewBackfillForm, error) {
	fv, err := c.FormParams()
	if err != nil {
		return views.NewBackfillForm{}, BadRequest("form", "could not read the form: %v", err)
	}
	return h.formFromValues(c, fv.Get, func(k string) []string { return fv[k] }), nil
}

// preview asks the engine (the same call as the API) what req would do.
func (h *Handler) preview(c echo.Context, f views.NewBackfillForm, req jobs.Request) views.PreviewView {
	eng, err := h.engine()
	if err != nil {
		return views.PreviewView{Error: err.Error()}
	}
	p, err := eng.Preview(c.Request().Context(), req)
	if err != nil {
		var ue *UserError
		if errors.As(engineErr(err), &ue) {
			return views.PreviewView{Error: formMessage(f, ue), Field: formField(ue.Field)}
		}
		return views.PreviewView{Error: "the preview failed: " + err.Error()}
	}
	pv := views.PreviewView{Partitions: p.TotalPartitions, Chunks: p.TotalChunks, Runs: p.TotalRuns,
		FirstChunk: p.FirstChunk.Keys, FirstAsset: p.FirstChunk.Asset, Status: statusBar(p.Status),
		SkippedCount: p.SkippedCount, Estimate: estimateOf(p), Stale: p.Status["stale"]}
	// Drawn with stale partitions in the stale colour, as the overview and
	// the asset grid draw them.
	pv.StatusBar = withStale(pv.Status, pv.Stale)
	if len(pv.FirstChunk) > 20 {
		// More than the server lists (its first 1,000) when the chunk is larger.
		pv.FirstChunk = append(pv.FirstChunk[:20:20], "… "+views.Num(max(p.FirstChunk.Partitions, int64(len(p.FirstChunk.Keys)))-20)+" more")
	}
	for _, a := range p.Assets {
		pa := views.PreviewAsset{Asset: a.Asset, Partitions: a.Partitions, Chunks: a.Chunks, Status: withStale(statusBar(a.Status), a.Status["stale"])}
		if req.Selector.Type == "range" && len(p.Assets) <= 8 {
			pa.Grid = h.previewGrid(c, a.Asset, req.Selector.Start, req.Selector.End)
		}
		pv.Assets = append(pv.Assets, pa)
	}
	for i, s := range p.Skipped {
		if i == 20 {
			break
		}
		pv.Skipped = append(pv.Skipped, views.KV{K: s.Asset + " " + s.Partition, V: s.Reason})
	}
	return pv
}

// gapsPreview shows the gap ranges a "Fill gaps" selection fills.
func gapsPreview(g *Gaps) *views.GapsModel {
	if g == nil {
		return nil
	}
	return gapsModel(*g, 50)
}

func statusBar(m map[string]int64) views.Bar {
	c := db.Counts{}
	for k, v := range m {
		c[k] = v
	}
	return barOf(c)
}

// formPreview is the preview panel of form f: what the backfill would do,
// or the error that refuses it (Field is the form's input name). The
// Preview button and a prefilled /backfills/new both show it. The error is
// one the form cannot show only when it is not the user's.
func (h *Handler) formPreview(c echo.Context, f views.NewBackfillForm) (views.PreviewView, error) {
	req, g, err := h.requestFromForm(c, f)
	var pv views.PreviewView
	if err != nil {
		var ue *UserError
		if !errors.As(err, &ue) {
			return pv, err
		}
		pv = views.PreviewView{Error: formMessage(f, ue), Field: formField(ue.Field)}
	} else {
		pv = h.preview(c, f, req)
	}
	if pv.Error == "" || (g != nil && g.Total > 0) {
		// A refused gap search (no watermark, nothing missing) says so
		// once in the preview, as its error, not again as its gaps.
		pv.Gaps = gapsPreview(g)
	}
	if pv.Error != "" {
		pv.Field = formField(pv.Field) // "form" for an error of no field
	} else if f.Selector == "explicit" {
		pv.Duplicates, pv.DuplicateNote = duplicateKeys(f.Keys)
	}
	return pv, nil
}

// duplicateKeys counts the lines of a pasted key list that repeat a key of
// an earlier line, and says which keys, on which lines (as the textarea
// numbers them, blank lines included; the first 10 keys).
func duplicateKeys(list string) (int, string) {
	lines := map[string][]int{}
	var order []string
	n := 0
	for i, line := range strings.Split(list, "\n") {
		k := strings.TrimSpace(line)
		if k == "" {
			continue
		}
		if len(lines[k]) == 1 {
			order = append(order, k)
		}
		if len(lines[k]) > 0 {
			n++
		}
		lines[k] = append(lines[k], i+1)
	}
	if n == 0 {
		return 0, ""
	}
	const shown = 10
	parts := make([]string, 0, min(len(order), shown))
	for _, k := range order[:min(len(order), shown)] {
		nums := make([]string, len(lines[k]))
		for j, l := range lines[k] {
			nums[j] = strconv.Itoa(l)
		}
		parts = append(parts, fmt.Sprintf("%s (lines %s and %s)", k, strings.Join(nums[:len(nums)-1], ", "), nums[len(nums)-1]))
	}
	if len(order) > shown {
		parts = append(parts, fmt.Sprintf("and %d more", len(order)-shown))
	}
	what := "1 duplicate key ignored"
	if n > 1 {
		what = fmt.Sprintf("%d duplicate keys ignored", n)
	}
	return n, what + ", each partition is built once: " + strings.Join(parts, ", ")
}

// BackfillPreview answers the form's live preview: the panel alone for htmx,
// the whole form with the preview otherwise.
func (h *Handler) BackfillPreview(c echo.Context) error {
	f, err := postedForm(h, c)
	if err != nil {
		return err
	}
	pv, err := h.formPreview(c, f)
	if err != nil {
		return err
	}
	if c.Request().Header.Get("HX-Request") != "" {
		return render(c, http.StatusOK, views.PreviewPanel(pv))
	}
	f.Preview = &pv
	status := http.StatusOK
	if pv.Error != "" {
		f.Errors[pv.Field] = pv.Error
		status = http.StatusBadRequest
	}
	return render(c, status, views.BackfillNewPage(page(c, "New backfill", "backfills"), f))
}

// BackfillLaunch creates the backfill through the engine with the form's
// idempotency key, so that a double submit launches once.
func (h *Handler) BackfillLaunch(c echo.Context) error {
	f, err := postedForm(h, c)
	if err != nil {
		return err
	}
	eng, err := h.engine()
	if err != nil {
		return err
	}
	req, _, err := h.requestFromForm(c, f)
	if err == nil {
		var cr jobs.Created
		cr, err = eng.Create(c.Request().Context(), req, f.IdempotencyKey, actor(c))
		if err == nil {
			return c.Redirect(http.StatusSeeOther, BackfillHref(cr.Backfill.ID))
		}
	}
	status, ierr := setError(&f, err)
	if ierr != nil {
		return ierr
	}
	var ue *UserError
	if errors.As(engineErr(err), &ue) && ue.Field == "Idempotency-Key" && ue.Status == http.StatusConflict {
		// The same key with a different form (a page reloaded or gone back
		// to after a launch, then changed): start a fresh key, keep the
		// values, and say it in the form's words (the key is hidden).
		f.IdempotencyKey = "bfk_" + strings.ToLower(ulid.Make().String())
		f.Errors["form"] = "this form was launched already, with other values" + launchedAs(ue.Message) + "; press Launch again to launch a new backfill with these values"
	}
	// Refused: the address stays the form's (hx-push-url is for a launch),
	// and so does the scroll position, by the Launch button and the errors
	// (the window goes to the top only for the new backfill's page).
	c.Response().Header().Set("HX-Push-Url", "false")
	c.Response().Header().Set("HX-Reswap", "innerHTML")
	return render(c, status, views.BackfillNewPage(page(c, "New backfill", "backfills"), f))
}

// launchedAs is " (backfill ID)" when msg, the engine's refusal of a reused
// idempotency key, names the backfill it launched.
func launchedAs(msg string) string {
	_, after, ok := strings.Cut(msg, "(backfill ")
	if id, _, ok2 := strings.Cut(after, ")"); ok && ok2 && id != "" {
		return " (backfill " + id + ")"
	}
	return ""
}

// BackfillSelectionCount counts the asset grid's selection (htmx). A plain
// range is counted arithmetically; with the bar's "Only (name=value)"
// dimension filter or its "Only missing and failed" (selector) the
// selection is a filter selector, counted by the same preview as the
// new-backfill form the bar opens, so that the count and its refusals (an
// unknown dimension or value) are the form's.
func (h *Handler) BackfillSelectionCount(c echo.Context) error {
	a, err := h.asset(c.Request().Context(), c.QueryParam("asset"))
	if err != nil {
		return err
	}
	if strings.TrimSpace(c.QueryParam("dimension")) != "" || c.QueryParam("selector") != "" {
		q := c.QueryParams()
		f := h.formFromValues(c, q.Get, func(k string) []string { return q[k] })
		req, err := requestFromForm(f)
		if err != nil {
			var ue *UserError
			if !errors.As(err, &ue) {
				return err
			}
			return render(c, http.StatusOK, views.SelectionCount(0, ue.Message))
		}
		pv := h.preview(c, f, req)
		return render(c, http.StatusOK, views.SelectionCount(pv.Partitions, pv.Error))
	}
	if a.Space.Len() == 0 {
		return render(c, http.StatusOK, views.SelectionCount(0, "this asset has no partitions yet"))
	}
	lo, hi, err := a.keyRange(strings.TrimSpace(c.QueryParam("start")), strings.TrimSpace(c.QueryParam("end")))
	if err != nil {
		return render(c, http.StatusOK, views.SelectionCount(0, err.Error()))
	}
	return render(c, http.StatusOK, views.SelectionCount(hi-lo+1, ""))
}

// PreviewBuckets is the number of buckets of the preview's mini grid.
const PreviewBuckets = 40

// previewGrid draws a range selection's current status as a bucket strip
// whose runs link to the asset page zoomed on them (nil when it cannot).
func (h *Handler) previewGrid(c echo.Context, asset, start, end string) *views.Grid {
	ctx := c.Request().Context()
	a, err := h.asset(ctx, asset)
	if err != nil || a.Space.Len() == 0 {
		return nil
	}
	lo, hi, err := a.keyRange(start, end)
	if err != nil {
		return nil
	}
	g, err := h.bucketGrid(ctx, a, lo, hi, PreviewBuckets, "", [2]int64{-1, -1}, nil, nil)
	if err != nil {
		return nil
	}
	for i := range g.Buckets {
		b := &g.Buckets[i]
		b.Href = AssetHref(asset) + "?from=" + url.QueryEscape(b.From) + "&to=" + url.QueryEscape(b.To)
	}
	return &g
}
