package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/handlers"
)

// plainEvery is how often at most a --wait that does not write to a
// terminal prints a line; it prints one only when the line's content
// changed since the last one it printed.
const plainEvery = 2 * time.Second

// retryRefresh is how often a --wait reads the backfill's queued runs
// again while some are queued (at most once a second when the run counts
// changed, as when a run goes back to the queue for a retry).
const retryRefresh = 2 * time.Second

// plainHeartbeat is how long at most a --wait that does not write to a
// terminal stays silent: a CI job that kills jobs silent for too long then
// still sees the wait alive while a long chunk runs.
const plainHeartbeat = time.Minute

// plainLines prints the progress of a --wait when the output is not a
// terminal: a line only when what it says changed (key), at most one per
// plainEvery, the same line again after plainHeartbeat of silence, and
// always the last one.
type plainLines struct {
	lastKey string
	lastAt  time.Time
}

// due reports whether a line of this key is to be printed now; final is
// the last line of the wait.
func (p *plainLines) due(key string, now time.Time, final bool) bool {
	if key == p.lastKey && (final || now.Sub(p.lastAt) < plainHeartbeat) {
		return false
	}
	if !final && now.Sub(p.lastAt) < plainEvery {
		return false
	}
	p.lastKey, p.lastAt = key, now
	return true
}

// waitLines writes the progress of a --wait: the line in place on a
// terminal, otherwise as plainLines says.
type waitLines struct {
	out   io.Writer
	tty   bool
	plain plainLines
}

func newWaitLines(out io.Writer) *waitLines { return &waitLines{out: out, tty: isTerminal(out)} }

// show writes line, whose content is key, at now; final is the last line
// of the wait.
func (w *waitLines) show(line, key string, now time.Time, final bool) {
	if w.tty {
		sayf(w.out, "\r\033[K%s", line)
	} else if w.plain.due(key, now, final) {
		sayln(w.out, line)
	}
}

// end closes the live line of a terminal.
func (w *waitLines) end() {
	if w.tty {
		sayln(w.out)
	}
}

// pollPause waits between two reads of a --wait, or returns ctx's error
// when it ends first.
func pollPause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(300 * time.Millisecond):
		return nil
	}
}

// retryWait is when each of a backfill's queued runs that waits out a
// retry's backoff may start (its not_before).
type retryWait []time.Time

// at is the runs still waiting at now, and the first time one may start.
func (w retryWait) at(now time.Time) (runs int, first time.Time) {
	for _, t := range w {
		if !t.After(now) {
			continue
		}
		if runs == 0 || t.Before(first) {
			first = t
		}
		runs++
	}
	return runs, first
}

// backfillProgress follows a backfill for --wait and writes its progress
// line. Its rate is the partitions finished since the wait began over the
// time the backfill could work: time during which nothing ran because every
// waiting run waited out a retry's backoff (or the backfill was paused)
// does not count, so a backoff does not make the ETA grow. While runs wait
// for a retry the line says until when, and shows no ETA.
type backfillProgress struct {
	c  *client
	id string

	began    bool
	doneAt0  int64     // partitions finished at the first poll
	lastPoll time.Time // the previous poll
	idle     bool      // at the previous poll nothing ran and nothing could start before a backoff ended
	busy     time.Duration

	retry        retryWait // from the last look at the queued runs
	retryFetched time.Time
	retryCounts  string // the counts the last look was made at
}

// poll fetches what the line needs beyond the backfill itself (the queued
// runs' not_before, when some are queued) and accounts the time since the
// previous poll.
func (p *backfillProgress) poll(ctx context.Context, b handlers.BackfillJSON, now time.Time) error {
	done := finishedPartitions(b)
	if !p.began {
		p.began, p.doneAt0, p.lastPoll = true, done, now
	} else {
		if !p.idle {
			p.busy += now.Sub(p.lastPoll)
		}
		p.lastPoll = now
	}
	if b.State != "RUNNING" || b.Counts["queued"] == 0 {
		p.retry, p.retryCounts = nil, ""
	} else {
		counts := fmt.Sprint(b.Counts["queued"], b.Counts["running"], b.Counts["succeeded"], b.Counts["failed"])
		since := now.Sub(p.retryFetched)
		if since >= retryRefresh || (counts != p.retryCounts && since >= time.Second) {
			w, err := retryWaits(ctx, p.c, p.id)
			if err != nil {
				return err
			}
			p.retry, p.retryFetched, p.retryCounts = w, now, counts
		}
	}
	waiting, _ := p.retry.at(now)
	p.idle = b.Counts["running"] == 0 && (waiting > 0 || b.State == "PAUSED")
	return nil
}

// retryWaits reads the not_before of the backfill's queued runs (a run
// queued for a retry may not start before it; one waiting for a slot or a
// lease has none, or one already past).
func retryWaits(ctx context.Context, c *client, id string) (retryWait, error) {
	var w retryWait
	cursor := ""
	for {
		q := url.Values{"state": {"queued"}, "limit": {"1000"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page struct {
			Chunks []struct {
				NotBefore *time.Time `json:"not_before"`
			} `json:"chunks"`
			NextCursor string `json:"next_cursor"`
		}
		if err := c.do(ctx, "GET", "/api/v1/backfills/"+url.PathEscape(id)+"/chunks?"+q.Encode(), nil, nil, &page); err != nil {
			return w, err
		}
		for _, r := range page.Chunks {
			if r.NotBefore != nil {
				w = append(w, *r.NotBefore)
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			return w, nil
		}
	}
}

func finishedPartitions(b handlers.BackfillJSON) int64 {
	return b.Partitions["materialized"] + b.Partitions["failed"] + b.Partitions["upstream_failed"]
}

// line is the progress line, and its key: the line without what changes by
// itself as time passes (rate, ETA, a countdown), so that the plain output
// prints a line only when the backfill changed.
func (p *backfillProgress) line(b handlers.BackfillJSON, now time.Time) (line, key string) {
	const width = 30
	done := finishedPartitions(b)
	filled := 0
	if b.TotalPartitions > 0 {
		filled = int(min(done, b.TotalPartitions) * width / b.TotalPartitions)
	}
	head := fmt.Sprintf("[%s%s] %s/%s done, %s failed", strings.Repeat("#", filled), strings.Repeat(".", width-filled),
		num(done), num(b.TotalPartitions), num(b.Partitions["failed"]+b.Partitions["upstream_failed"]))
	rate := 0.0
	if p.busy > 0 {
		rate = float64(done-p.doneAt0) / p.busy.Seconds()
	}
	var eta, wait, countdown string
	waiting, first := p.retry.at(now)
	switch {
	case terminalStates[b.State]:
	case waiting > 0:
		until := retryUntil(first, now)
		wait = fmt.Sprintf("1 run waiting for retry until %s UTC", until)
		if waiting > 1 {
			wait = fmt.Sprintf("%d runs waiting for retry, the first until %s UTC", waiting, until)
		}
		countdown = " (in " + secondsText(first.Sub(now)) + ")"
	case b.State == "RUNNING" && b.Waiting != nil && done < b.TotalPartitions:
		// Nothing runs, held (a throttle, an upstream): a rate-based ETA
		// would promise seconds while it waits a minute.
		eta = "waiting: " + b.Waiting.Reason
	case b.State == "RUNNING" && rate > 0 && done < b.TotalPartitions:
		eta = "ETA " + secondsText(time.Duration(float64(b.TotalPartitions-done)/rate*float64(time.Second)))
	case b.State == "RUNNING" && done < b.TotalPartitions:
		eta = "ETA unknown yet"
	}
	line = head
	if p.busy > 0 || !terminalStates[b.State] {
		// A backfill already over when the wait began (`backfill wait` of
		// a finished one) has no rate to show: "0/s" would be untrue.
		line += ", " + catalog.HumanRate(rate, "")
	}
	key = head
	switch {
	case wait != "":
		line += ", " + wait + countdown
		key += ", " + wait
	case eta != "":
		line += ", " + eta
	}
	line += ", " + stateLabel(b)
	key += ", " + stateLabel(b)
	return line, key
}

// secondsText writes a wait: whole seconds below a minute (rounded up, so
// a wait not over yet never reads 0 s), else as the web pages write
// durations.
func secondsText(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%d s", max(int64((d+time.Second-1)/time.Second), 0))
	}
	return catalog.HumanDuration(d.Round(time.Second))
}

// retryUntil is when a retry may start as the progress line says it: the
// time of day, with the date when that is another day (UTC) than now's (a
// backoff of an hour, or an executor's Retry-After, may pass midnight).
func retryUntil(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.Year() != now.Year() || t.YearDay() != now.YearDay() {
		return t.Format("2006-01-02 15:04:05")
	}
	return t.Format("15:04:05")
}
