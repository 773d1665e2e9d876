package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/views"
)

// RelaunchLinkMax is the longest address "Backfill what it did not build…"
// opens the form with; a longer one (a long explicit key list) is posted to
// the form's preview instead, which renders the same form.
const RelaunchLinkMax = 4000

// relaunchFor is the backfill page's "Backfill what it did not build…" of a
// CANCELED or FAILED backfill b: the new-backfill form prefilled with b's
// assets, its range and dimension filter (or, for a key list, the keys of
// the list still missing or failed), chunk size, concurrency and priority,
// selecting only the missing and failed partitions, to preview and launch.
// nil when b built everything it selected or is in another state. When the
// form cannot take b's selection, Unavailable says so with the CLI and API
// alternative.
func (h *Handler) relaunchFor(ctx context.Context, b db.Backfill) (*views.Relaunch, error) {
	if (b.State != db.BackfillCanceled && b.State != db.BackfillFailed) || b.PartitionsMaterialized >= b.TotalPartitions {
		return nil, nil
	}
	var sel storedSelector
	if err := json.Unmarshal([]byte(b.Selector), &sel); err != nil {
		return nil, nil
	}
	assets := assetList(b)
	q := url.Values{}
	q["asset"] = assets
	r := &views.Relaunch{}
	tail := "what it built is left out"
	switch sel.Type {
	case "range", "filter":
		stop, err := h.relaunchRange(ctx, b, sel, assets, r, q, &tail)
		if err != nil {
			return nil, err
		}
		if stop {
			return r, nil
		}
	case "explicit", "retry":
		ok, err := h.relaunchKeys(ctx, b, r, q)
		if err != nil || !ok {
			return r, err
		}
	default:
		return nil, nil
	}
	return relaunchLink(b, r, q, tail), nil
}

// storedSelector is what the pages read of a backfill's stored selector
// (relaunchFor, describeSelectorOf).
type storedSelector struct {
	Type       string              `json:"type"`
	Start      string              `json:"start"`
	End        string              `json:"end"`
	Statuses   []string            `json:"statuses"`
	Dimensions map[string][]string `json:"dimensions"`
}

// relaunchRange prefills q with b's range or filter selection: the rest of a
// canceled range, or its missing and failed partitions. It answers true when
// there is no form to open (Unavailable says why).
func (h *Handler) relaunchRange(ctx context.Context, b db.Backfill, sel storedSelector, assets []string, r *views.Relaunch, q url.Values, tail *string) (bool, error) {
	if sel.Type == "range" && b.State == db.BackfillCanceled && len(assets) == 1 && len(sel.Dimensions) == 0 {
		// A canceled range: the rest of it, from the first chunk it
		// did not finish. "Only missing and failed" would leave out the
		// partitions it never reached that were built before (a
		// canceled rebuild).
		from, rerun, err := h.resumeKey(ctx, b)
		if err != nil {
			return false, err
		}
		if from != "" {
			q.Set("selector", "range")
			q.Set("start", from)
			if sel.End != "" {
				q.Set("end", sel.End)
			}
			r.Note = "the rest of its range, from the first chunk it did not finish: " + rangeWords(from, sel.End) + " of the same asset"
			if rerun > 0 {
				*tail = fmt.Sprintf("what it built before %s is left out (the %s chunk%s it finished after that point run again)", from, views.Num(rerun), plural(rerun))
			} else {
				*tail = "what it built before " + from + " is left out"
			}
			return false, nil
		}
	}
	statuses, ok := relaunchStatuses(sel.Statuses)
	if !ok {
		r.Unavailable = fmt.Sprintf("Its selection (%s) is not one the new-backfill form makes. %s", describeSelection(b), relaunchElsewhere(b, assets, "--missing --failed"))
		return true, nil
	}
	if len(statuses) == 2 && statuses[0] == "missing" && statuses[1] == "failed" {
		q.Set("selector", "missing_failed")
		r.Note = "only the missing and failed partitions"
	} else {
		q.Set("selector", "statuses")
		q["status"] = statuses
		r.Note = "only the partitions that are " + orList(statuses) + " (as it selected " + orList(sel.Statuses) + " ones)"
	}
	if sel.Start != "" {
		q.Set("start", sel.Start)
	}
	if sel.End != "" {
		q.Set("end", sel.End)
	}
	if len(sel.Dimensions) > 0 {
		name, value, ok := oneDimension(sel.Dimensions)
		if !ok {
			r.Unavailable = fmt.Sprintf("Its dimension filter (%s) has more than the one name=value the new-backfill form takes. %s",
				dimsWords(sel.Dimensions),
				relaunchElsewhere(b, assets, "--missing --failed --dimension NAME=VALUE,VALUE"))
			return true, nil
		}
		q.Set("dimension", name+"="+value)
	}
	r.Note += " of the same assets, " + rangeWords(sel.Start, sel.End)
	return false, nil
}

// relaunchLink adds b's chunk size, concurrency, priority and title to q
// and makes r the link (or, too long for one, the fields to post) to the
// new-backfill form.
func relaunchLink(b db.Backfill, r *views.Relaunch, q url.Values, tail string) *views.Relaunch {
	q.Set("chunk_size", strconv.FormatInt(b.ChunkSize, 10))
	q.Set("max_concurrent_runs", strconv.FormatInt(b.MaxConcurrentRuns, 10))
	if b.Priority != 0 {
		q.Set("priority", strconv.FormatInt(b.Priority, 10))
	}
	q.Set("title", relaunchTitle(b))
	r.Note = "Opens the new-backfill form with " + r.Note + ", with its chunk size (" + views.Num(b.ChunkSize) +
		") and concurrency (" + views.Num(b.MaxConcurrentRuns) + "): " + tail + ". Preview, then launch."
	if href := "/backfills/new?" + q.Encode(); len(href) <= RelaunchLinkMax {
		r.Href = href
		return r
	}
	// Too long an address for a link: the same values, posted to the
	// form's preview, which renders the form with them.
	for _, k := range []string{"asset", "selector", "keys", "start", "end", "dimension", "chunk_size", "max_concurrent_runs", "priority", "title"} {
		for _, v := range q[k] {
			r.Fields = append(r.Fields, views.KV{K: k, V: v})
		}
	}
	return r
}

// relaunchKeys prefills q with the keys of b's key list (an explicit list or
// a retry's failed partitions) that are not materialized now. It answers
// false when there is no form to open: Note or Unavailable says why.
func (h *Handler) relaunchKeys(ctx context.Context, b db.Backfill, r *views.Relaunch, q url.Values) (bool, error) {
	segs, err := db.Segments(ctx, h.Store.Reader(), b.ID)
	if err != nil {
		return false, err
	}
	assets := assetList(b)
	var total int64
	for _, s := range segs {
		total += s.Partitions
	}
	if total > MaxFormKeys {
		r.Unavailable = fmt.Sprintf("Its list holds %s keys, more than the new-backfill form takes (%s). %s", views.Num(total), views.Num(MaxFormKeys),
			relaunchElsewhere(b, assets, "--partitions-file FILE"))
		return false, nil
	}
	if h.Engine == nil {
		r.Unavailable = "The backfill engine is not running on this server, so its keys cannot be read."
		return false, nil
	}
	left := map[string][]string{} // asset -> keys not materialized, in list order
	var order []string
	var built int64
	for _, s := range segs {
		keys, idx, err := h.Engine.SegmentKeys(ctx, b, s)
		if err != nil {
			r.Unavailable = fmt.Sprintf("The keys of %s could not be read (%v). %s", s.Asset, err, relaunchElsewhere(b, assets, "--partitions-file FILE"))
			return false, nil
		}
		rows, err := h.Store.StatusesAt(ctx, s.AssetID, idx)
		if err != nil {
			return false, err
		}
		done := make(map[int64]bool, len(rows))
		for _, st := range rows {
			done[st.Idx] = st.Status == db.StatusMaterialized
		}
		for i, k := range keys {
			if done[idx[i]] {
				built++
				continue
			}
			if left[s.Asset] == nil {
				order = append(order, s.Asset)
			}
			left[s.Asset] = append(left[s.Asset], k)
		}
	}
	if len(order) == 0 {
		r.Note = "Every partition of its list is materialized now: nothing is left to build."
		return false, nil
	}
	keys := left[order[0]]
	for _, a := range order[1:] {
		if !slices.Equal(left[a], keys) {
			parts := make([]string, len(order))
			for i, a := range order {
				parts[i] = fmt.Sprintf("%s %s", a, views.Num(int64(len(left[a]))))
			}
			r.Unavailable = fmt.Sprintf("Its assets have different partitions left to build (%s), and the new-backfill form takes one key list for all the assets it ticks. %s",
				strings.Join(parts, ", "), relaunchElsewhere(b, nil, "--partitions-file FILE"))
			return false, nil
		}
	}
	q["asset"] = order
	q.Set("selector", "explicit")
	q.Set("keys", strings.Join(keys, "\n"))
	r.Note = fmt.Sprintf("the %s of its list that %s missing or failed now (%s of its %s %s materialized)",
		keysWord(len(keys)), isAre(len(keys)), views.Num(built), views.Num(total), isAre(int(built)))
	return true, nil
}

// relaunchStatuses are the statuses a relaunch of a selection with
// statuses picks: missing and failed for a range (none), else its own plus
// failed (a partition it failed to build is failed now, no longer missing,
// stale or tainted); ok is false for a status the form does not offer.
func relaunchStatuses(sel []string) ([]string, bool) {
	out := []string{"failed"}
	if len(sel) == 0 {
		out = append(out, "missing")
	}
	for _, s := range sel {
		if statusOrder(s) == len(views.StatusChoices) {
			return nil, false
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return statusOrder(a) - statusOrder(b) })
	return out, true
}

// oneDimension is the single name=value of a dimension filter, as the
// form's Dimension filter field takes it.
func oneDimension(dims map[string][]string) (string, string, bool) {
	if len(dims) != 1 {
		return "", "", false
	}
	for name, values := range dims {
		if len(values) == 1 {
			return name, values[0], true
		}
	}
	return "", "", false
}

// relaunchElsewhere says how to relaunch b's leftovers without the form:
// the CLI (with the selection flags given) and the API.
func relaunchElsewhere(b db.Backfill, assets []string, flags string) string {
	who := "ASSET…"
	if len(assets) > 0 {
		who = strings.Join(assets, " ")
	}
	return fmt.Sprintf("Launch the rest with the CLI, tessera backfill create %s %s --chunk-size %d --concurrency %d, or with POST /api/v1/backfills (the API reference lists its selectors).",
		who, flags, b.ChunkSize, b.MaxConcurrentRuns)
}

// relaunchTitle names the relaunch after b's name, not its id (a title is
// at most 200 characters).
func relaunchTitle(b db.Backfill) string {
	t := "Rest of " + b.Name()
	for utf8.RuneCountInString(t) > 200 {
		_, n := utf8.DecodeLastRuneInString(t)
		t = t[:len(t)-n]
	}
	return t
}

func rangeWords(start, end string) string {
	switch {
	case start != "" && end != "":
		return "range " + start + " … " + end
	case start != "":
		return "range from " + start
	case end != "":
		return "range up to " + end
	}
	return "every partition"
}

func orList(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

func keysWord(n int) string {
	if n == 1 {
		return "1 key"
	}
	return views.Num(int64(n)) + " keys"
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// dimsWords says a dimension filter as the backfill page does: "region =
// eu or us, tier = gold".
func dimsWords(dims map[string][]string) string {
	names := slices.Sorted(maps.Keys(dims))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + " = " + strings.Join(dims[n], " or ")
	}
	return strings.Join(parts, ", ")
}

// resumeKey is where canceled backfill b (one asset, one range) stopped: the
// first key of its first chunk not finished successfully, and how many
// chunks after it did finish (they would run again). "" when it cannot be
// told (no such chunk).
func (h *Handler) resumeKey(ctx context.Context, b db.Backfill) (string, int64, error) {
	firstChunk, firstKey, ok, err := h.Store.FirstUnfinishedRun(ctx, b.ID)
	if err != nil {
		return "", 0, err
	}
	chunk, key := b.NextChunk, ""
	if ok && firstChunk < chunk {
		chunk, key = firstChunk, firstKey
	}
	if chunk >= b.TotalChunks {
		return "", 0, nil
	}
	if key == "" {
		// Never planned: its first key as the engine cuts the selection.
		if h.Engine == nil {
			return "", 0, nil
		}
		if key, err = h.Engine.ChunkFirstKey(ctx, b, chunk); err != nil || key == "" {
			return "", 0, err
		}
	}
	rerun, err := h.Store.SucceededRunsAfter(ctx, b.ID, chunk)
	if err != nil {
		return "", 0, err
	}
	return key, rerun, nil
}
