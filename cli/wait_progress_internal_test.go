package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
)

// Off a terminal, a --wait prints a line when it changed (at most one per
// plainEvery), the same line again after plainHeartbeat of silence (so a
// CI job that kills silent jobs sees it alive), and the last line.
func TestPlainLinesChangeAndHeartbeat(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var p plainLines
	steps := []struct {
		key   string
		after time.Duration
		final bool
		want  bool
	}{
		{"a", 0, false, true},                                          // the first line
		{"a", time.Second, false, false},                               // unchanged
		{"b", time.Second, false, false},                               // changed, but too soon
		{"b", plainEvery, false, true},                                 // changed
		{"b", plainEvery + 30*time.Second, false, false},               // unchanged, not yet silent long
		{"b", plainEvery + plainHeartbeat, false, true},                // heartbeat
		{"b", plainEvery + plainHeartbeat + time.Second, true, false},  // last line, already printed
		{"c", plainEvery + plainHeartbeat + 2*time.Second, true, true}, // last line, new
	}
	for i, s := range steps {
		if got := p.due(s.key, t0.Add(s.after), s.final); got != s.want {
			t.Errorf("step %d (%q at %v, final %v): due %v, want %v", i, s.key, s.after, s.final, got, s.want)
		}
	}
}

// A backfill held while nothing runs (its pool's throttle) shows what it
// waits for instead of an ETA from its rate so far, which promised seconds
// while the throttle held it a minute (found by the regression audit).
func TestWaitLineSaysWhatItWaitsFor(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &backfillProgress{began: true, busy: 2 * time.Second}
	b := handlers.BackfillJSON{State: "RUNNING", TotalPartitions: 2, Partitions: map[string]int64{"materialized": 1},
		Waiting: &jobs.RunWait{Reason: "chunk 1 waits for pool p: its throttle (1 run per 1 min) has no run left; the next in about 48 s"}}
	line, _ := p.line(b, t0)
	if !strings.Contains(line, "waiting: chunk 1 waits for pool p") || strings.Contains(line, "ETA") {
		t.Errorf("progress line %q, want what it waits for and no ETA", line)
	}
	b.Waiting = nil
	if line, _ = p.line(b, t0); !strings.Contains(line, "ETA ") {
		t.Errorf("progress line %q without a wait, want an ETA from the rate", line)
	}
}

// A retry's time is said as a time of day while it is today (UTC), with
// its date when it is another day: "until 00:30:00" late in the evening
// read as half an hour ago.
func TestRetryUntilSaysTheDateOfAnotherDay(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 23, 50, 0, 0, time.UTC)
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{now.Add(5 * time.Minute), "23:55:00"},
		{now.Add(40 * time.Minute), "2026-11-30 00:30:00"},
		{time.Date(2027, 11, 29, 23, 55, 0, 0, time.UTC), "2027-11-29 23:55:00"},        // a year on, the same day of the year
		{time.Date(2026, 11, 30, 0, 55, 0, 0, time.FixedZone("CET", 3600)), "23:55:00"}, // the same instant seen elsewhere: today in UTC
	} {
		if got := retryUntil(c.t, now); got != c.want {
			t.Errorf("retryUntil(%v) = %q, want %q", c.t, got, c.want)
		}
	}
	var p backfillProgress
	p.retry = retryWait{now.Add(40 * time.Minute)}
	line, _ := p.line(handlers.BackfillJSON{State: "RUNNING", TotalPartitions: 10, Partitions: map[string]int64{}}, now)
	if !strings.Contains(line, "1 run waiting for retry until 2026-11-30 00:30:00 UTC (in ") {
		t.Errorf("line %q does not say the retry's date", line)
	}
}
