package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/views"
)

// Live-update stream tuning (variables so tests can shorten them).
var (
	// StreamHeartbeat is the period of the comment line that keeps proxies
	// from closing an idle stream and detects clients that went away.
	StreamHeartbeat = 15 * time.Second
	// StreamMaxLifetime closes a stream after this long; the browser's
	// EventSource reconnects by itself, so no connection lives forever.
	StreamMaxLifetime = 30 * time.Minute
	// StreamMinInterval coalesces bursts of changes into one update.
	StreamMinInterval = 300 * time.Millisecond
	// StreamSettle is how long after its last update a stream sends one
	// more, when nothing changed meanwhile (stream).
	StreamSettle = time.Second
)

// BackfillStream is the server-sent event stream of one backfill's page: an
// "update" event whenever the backfill changes (htmx then re-fetches the
// partials). Streams are bounded per user (or anonymous address) and in all
// (takeStreamSlot: 429 or 503, which the page's app.js shows), and removed
// on disconnect, heartbeat failure, the maximum lifetime or once their
// credential no longer holds (Auth.StillValid, every StreamCredentialCheck).
func (h *Handler) BackfillStream(c echo.Context) error {
	b, err := h.Store.Backfill(c.Request().Context(), c.Param("id"))
	if err != nil {
		return engineErr(err)
	}
	// Once the backfill is finished the page needs no more updates: the
	// stream says "done" (the page's sse-close) after the last one.
	return h.stream(c, b.ID, func(ctx context.Context) bool {
		b, err := h.Store.Backfill(ctx, b.ID)
		return err == nil && db.BackfillTerminal(b.State)
	})
}

// RunStream is the stream of a run's page (it follows the run's backfill).
func (h *Handler) RunStream(c echo.Context) error {
	r, err := h.Store.Run(c.Request().Context(), c.Param("id"))
	if err != nil {
		return engineErr(err)
	}
	return h.stream(c, r.BackfillID, nil)
}

// OverviewStream streams every backfill change (overview progress bars).
func (h *Handler) OverviewStream(c echo.Context) error { return h.stream(c, jobs.TopicAll, nil) }

// stream sends an "update" event whenever topic changes; when done (if not
// nil) holds after an update, it sends "done" and ends.
func (h *Handler) stream(c echo.Context, topic string, done func(context.Context) bool) error {
	eng, err := h.engine()
	if err != nil {
		return err
	}
	release, err := h.takeStreamSlot(c)
	if err != nil {
		return err
	}
	defer release()
	ch, cancel, err := eng.Broker().Subscribe(topic)
	if err != nil {
		return &UserError{Status: http.StatusServiceUnavailable, Code: "busy", Message: err.Error()}
	}
	defer cancel()
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// The first event closes the gap between rendering the page and
	// subscribing: a change in between would otherwise never show.
	if _, err := fmt.Fprint(w, "retry: 2000\n\nevent: update\ndata: connected\n\n"); err != nil {
		return nil
	}
	w.Flush()
	if c.QueryParam("once") != "" { // probes and tests: subscribe, answer, leave
		return nil
	}
	ctx := c.Request().Context()
	// finished sends "done" when done holds; after an update (settle), a
	// settling update StreamSettle later first (see settle below): the
	// page's last fetches may have dropped the update that said so.
	finished := func(settle bool) bool {
		if done == nil || !done(ctx) {
			return false
		}
		if settle {
			select {
			case <-ctx.Done():
				return true
			case <-time.After(StreamSettle):
			}
			_, _ = fmt.Fprint(w, "event: update\ndata: settled\n\n")
		}
		_, _ = fmt.Fprint(w, "event: done\ndata: finished\n\n")
		w.Flush()
		return true
	}
	if finished(false) {
		return nil
	}
	beat := time.NewTicker(StreamHeartbeat)
	defer beat.Stop()
	life := time.NewTimer(StreamMaxLifetime)
	defer life.Stop()
	// The credential the stream was opened with is checked again now and
	// then: a revoked or expired token, an ended session or a disabled
	// user ends the stream (the page's reconnect then gets the 401).
	principal := CurrentPrincipal(c)
	recheck := time.NewTicker(h.streamCredentialCheck())
	defer recheck.Stop()
	// The first event counts for the coalescing too: a change right after
	// it waits StreamMinInterval, so that the partials it made the page
	// fetch have been swapped in by then. Sent at once, it fell while they
	// were in flight, and htmx, whose swap replaces the element that had
	// queued it, dropped it: a pause right after the page loaded left the
	// badge on Running beside a Resume button.
	last := time.Now()
	// One more update StreamSettle after the last one, when no change came
	// meanwhile: a section whose request was still in flight when the
	// last update came drops that update (htmx's default hx-sync), and
	// under load the page then showed the state before the last change
	// (a progress one chunk short) until the next change, which may never
	// come. The settling update makes it fetch the state as it is.
	settle := time.NewTimer(StreamSettle)
	settle.Stop()
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-life.C:
			return nil
		case <-settle.C:
			if _, err := fmt.Fprint(w, "event: update\ndata: settled\n\n"); err != nil {
				return nil
			}
			w.Flush()
		case <-recheck.C:
			ok, err := h.Auth.StillValid(ctx, principal, h.Now())
			if err != nil && ctx.Err() == nil {
				h.Log.Warn("live stream: checking its credential", "err", err)
			}
			if !ok {
				return nil
			}
		case <-beat.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return nil
			}
			w.Flush()
		case <-ch:
			if wait := StreamMinInterval - time.Since(last); wait > 0 {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(wait):
				}
			}
			last = time.Now()
			if _, err := fmt.Fprint(w, "event: update\ndata: changed\n\n"); err != nil {
				return nil
			}
			w.Flush()
			if finished(true) {
				return nil
			}
			settle.Reset(StreamSettle)
		}
	}
}

// MaxLogBytes is the most of a log the run page shows (its tail).
const MaxLogBytes = 64 << 10

func (h *Handler) loadRun(c echo.Context) (views.RunPage, error) {
	ctx := c.Request().Context()
	r, err := h.Store.Run(ctx, c.Param("id"))
	if err != nil {
		return views.RunPage{}, engineErr(err)
	}
	p := views.RunPage{ID: r.ID, RunKey: r.RunKey, BackfillID: r.BackfillID, BackfillHref: BackfillHref(r.BackfillID),
		Asset: r.Asset, AssetHref: AssetHref(r.Asset), State: r.State, Chunk: r.Chunk, Partitions: r.Partitions,
		Materialized: r.Materialized, Failed: r.Failed, UpstreamFailed: r.UpstreamFailed,
		Keys: h.chunkKeysText(ctx, r.Asset, r.FirstKey, r.LastKey, r.Partitions, map[string]*assetCtx{}), Live: r.State == db.RunQueued || r.State == db.RunRunning}
	if r.Error != nil {
		p.Error = *r.Error
	}
	if r.State == db.RunQueued && h.Engine != nil {
		b, err := h.Store.Backfill(ctx, r.BackfillID)
		if err != nil {
			return p, err
		}
		w, err := h.Engine.WaitReason(ctx, b, r)
		if err != nil {
			return p, err
		}
		p.Wait, p.WaitHref = waitText(w)
	}
	atts, err := h.Store.Attempts(ctx, r.ID)
	if err != nil {
		return p, err
	}
	now := h.Now()
	for _, a := range atts {
		row := views.AttemptRow{N: a.Attempt, State: a.State, Started: fmtStamp(zoneOf(ctx), &a.StartedAt), Owner: a.Owner,
			Duration: durBetween(&a.StartedAt, a.FinishedAt, now)}
		if a.Error != nil {
			row.Error = truncateText(*a.Error, 500)
		}
		p.Attempts = append(p.Attempts, row)
	}
	if h.Engine != nil {
		outs, _, err := h.Engine.RunPartitions(ctx, r, RunPagePartitions)
		if err != nil {
			return p, err
		}
		for _, o := range outs {
			row := views.RunPartitionRow{Key: o.Partition, Href: PartitionHref(r.Asset, o.Partition),
				Status: o.Status, Attempt: o.Attempt, Error: truncateText(o.Error, 300)}
			if o.BuiltBy != "" {
				row.Error = "built by " + o.BuiltBy + " after this run started; not built again"
			}
			p.PartitionRows = append(p.PartitionRows, row)
		}
	}
	if n := len(atts); n > 0 {
		pick, err := logAttempt(c, atts)
		if err != nil {
			return p, err
		}
		p.LogAttempt, p.LogPicked = atts[pick].Attempt, pick != n-1
		l, err := h.Store.AttemptLog(ctx, r.ID, p.LogAttempt)
		if err != nil {
			return p, err
		}
		if len(l) > MaxLogBytes {
			l = "… (earlier output cut)\n" + l[len(l)-MaxLogBytes:]
		}
		p.Log = l
		if atts[pick].State == db.AttemptRunning {
			if h.Engine != nil {
				if live, ok := h.Engine.LiveLog(r.ID); ok {
					p.Log = live
				}
			}
			if p.Log == "" {
				p.Log = "(running; the log appears here as the attempt writes it)"
			}
		}
	}
	return p, nil
}

// logAttempt is the index in atts of the attempt whose log is asked for
// with ?attempt=N (default: the latest).
func logAttempt(c echo.Context, atts []db.Attempt) (int, error) {
	v := c.QueryParam("attempt")
	if v == "" {
		return len(atts) - 1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err == nil {
		for i, a := range atts {
			if a.Attempt == n {
				return i, nil
			}
		}
	}
	return 0, BadRequest("attempt", "attempt must be the number of one of this run's attempts (1 to %d), got %q", atts[len(atts)-1].Attempt, v)
}

// RunPagePartitions is how many partitions the run page lists.
const RunPagePartitions = 200

// RunShow renders /runs/{id}: partitions, attempts and the latest log.
func (h *Handler) RunShow(c echo.Context) error {
	p, err := h.loadRun(c)
	if err != nil {
		return err
	}
	p.BackfillName = p.BackfillID
	if b, err := h.Store.Backfill(c.Request().Context(), p.BackfillID); err == nil {
		p.BackfillName = b.Name()
	} else if !errors.Is(err, db.ErrNotFound) {
		return err
	}
	return render(c, http.StatusOK, views.RunPageView(page(c, "Chunk "+views.Num(p.Chunk)+" of "+p.BackfillName, "runs"), p))
}

// RunLivePartial re-renders the run's live section (htmx).
func (h *Handler) RunLivePartial(c echo.Context) error {
	p, err := h.loadRun(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.RunLive(p))
}

// ActiveBackfillsPartial re-renders the overview's active backfills (htmx).
func (h *Handler) ActiveBackfillsPartial(c echo.Context) error {
	rows, err := h.ActiveBackfillRows(c.Request().Context())
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.ActiveBackfillsSection(rows))
}
