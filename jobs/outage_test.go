package jobs

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/pgtest"
	"github.com/tessera-dev/tessera/testkit/poll"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

// outageWS runs each partition with a command (its processes are what a
// takeover kills) and counts no retry: an attempt recorded failed fails
// the backfill.
var outageWS = teststore.Assets(oneAttemptAsset("o.daily", "{daily: {start: 2025-01-01, end: 2025-03-02}}", "{command: [sh, -c, 'sleep 0.2']}"))

// TestClusterSurvivesOutageLongerThanLease: PostgreSQL stops mid-backfill
// for longer than the lease TTL while two instances run it, then starts
// again. Every heartbeat went stale during the outage; once back, no
// instance starts an attempt before renewing its own lease, nor takes
// another's over before that one had a lease TTL to renew: the backfill
// succeeds, no attempt is recorded failed (a takeover would kill the other
// instance's commands: "signal: killed"), and every attempt started after
// the outage succeeds (none fenced, lost nor killed).
func TestClusterSurvivesOutageLongerThanLease(t *testing.T) {
	t.Parallel()
	k := pgtest.NewCluster(t)
	const ttl = time.Second
	reports := t.TempDir()
	c := newClusterEnvAt(t, k.URL(t), 2, outageWS, func(i int) Options {
		// A heartbeat period of most of the TTL widens the window in
		// which an instance back from the outage has not renewed its
		// lease yet.
		return Options{LeaseTTL: ttl, Heartbeat: ttl * 7 / 10, MaxConcurrentRuns: 3, ReportDir: reports}
	})
	logs := &logCount{}
	c.engs[0].Log = slog.New(logs)
	c.start(0, false)
	c.start(1, false)
	b := c.create(Request{Assets: []string{"o.daily"}, Selector: Selector{Type: "range"}, ChunkSize: 1, MaxConcurrentRuns: 6})
	store := c.stores[0]
	succeeded := func() int64 {
		var n int64
		if err := store.RawReader().Get(&n, `SELECT COUNT(*) FROM runs WHERE backfill_id = ? AND state = 'succeeded'`, b.ID); err != nil {
			return -1
		}
		return n
	}
	poll.Eventually(t, 30*time.Second, "some runs to succeed on both instances before the outage", func() bool {
		return succeeded() >= 6 && countRows(t, store, `SELECT COUNT(DISTINCT owner) FROM attempts`) == 2
	})
	if n := succeeded(); n >= 55 {
		t.Fatalf("the backfill nearly ended before the outage (%d runs): make it longer", n)
	}
	stopped := db.Millis(time.Now())
	k.Stop(t)
	for _, e := range c.engs {
		poll.Eventually(t, 20*time.Second, "every heartbeat to be older than twice the lease TTL", func() bool {
			return time.Since(time.Unix(0, e.lastBeat.Load())) > 2*ttl
		})
	}
	// The outage is said once (warnings), never as errors each step.
	if n := logs.count(slog.LevelError, ""); n > 0 {
		t.Errorf("%d errors logged during the outage: %q", n, logs.messages(slog.LevelError))
	}
	if n := logs.count(slog.LevelWarn, "the store does not answer"); n != 1 {
		t.Errorf("the outage was said %d times, want once: %q", n, logs.messages(slog.LevelWarn))
	}
	if n := logs.count(slog.LevelWarn, "heartbeat failed"); n != 1 {
		t.Errorf("the failed heartbeats were said %d times, want once: %q", n, logs.messages(slog.LevelWarn))
	}
	k.Start(t)
	poll.Eventually(t, 20*time.Second, "the engine to say the store answers again", func() bool {
		return logs.count(slog.LevelInfo, "the store answers again") == 1
	})
	got := c.wait(0, b.ID, 90*time.Second, db.BackfillSucceeded, db.BackfillFailed)
	var failed []string
	if err := store.RawReader().Select(&failed, `SELECT a.error FROM attempts a JOIN runs r ON r.id = a.run_id WHERE r.backfill_id = ? AND a.state = 'failed'`, b.ID); err != nil {
		t.Fatal(err)
	}
	if len(failed) > 0 {
		t.Errorf("%d attempts recorded failed: %q", len(failed), failed)
	}
	if got.State != db.BackfillSucceeded {
		t.Fatalf("backfill %s after the outage, want succeeded", got.State)
	}
	var late []string
	if err := store.RawReader().Select(&late, `SELECT a.state || ': ' || COALESCE(a.error, '') FROM attempts a JOIN runs r ON r.id = a.run_id
		WHERE r.backfill_id = ? AND a.started_at > ? AND a.state != 'succeeded'`, b.ID, stopped); err != nil {
		t.Fatal(err)
	}
	if len(late) > 0 {
		t.Errorf("%d attempts started after the outage did not succeed: %q", len(late), late)
	}
	if n := countRows(t, store, `SELECT COUNT(*) FROM partition_status_all WHERE asset_id = ? AND status = 'materialized'`, c.ids["o.daily"]); n != 60 {
		t.Errorf("%d partitions materialized, want 60", n)
	}
	checkFinishedOnce(t, store, b.ID)
}

// takeoverWS runs its one chunk with a command long enough to be taken over.
var takeoverWS = teststore.Assets(oneAttemptAsset("k.daily", "{daily: {start: 2025-01-01, end: 2025-01-04}}", "{command: [sh, -c, 'sleep 20']}"))

// TestClusterTakeoverRecordsKilledAttemptInterrupted: an instance takes
// over another's attempt (a clock ten seconds ahead makes it find the
// lease expired) and kills its command's processes: the attempt is
// recorded interrupted, once, never failed ("signal: killed" counted
// against max_attempts), and the backfill succeeds on the retry.
func TestClusterTakeoverRecordsKilledAttemptInterrupted(t *testing.T) {
	t.Parallel()
	log := newBuildLog()
	reports := t.TempDir()
	c := newClusterEnv(t, 2, takeoverWS, func(i int) Options {
		if i == 0 {
			return Options{LeaseTTL: time.Second, ReportDir: reports} // the asset's command
		}
		return Options{Executor: log.exec(i, time.Millisecond), LeaseTTL: time.Second, ReportDir: reports}
	})
	c.engs[1].Now = func() time.Time { return time.Now().Add(10 * time.Second) }
	c.start(0, false)
	b := c.create(Request{Assets: []string{"k.daily"}, Selector: Selector{Type: "range"}, ChunkSize: 3, MaxConcurrentRuns: 1})
	poll.Eventually(t, 10*time.Second, "the command to start", func() bool {
		pids, _ := filepath.Glob(filepath.Join(reports, "*.proc"))
		return len(pids) == 1
	})
	c.start(1, false)
	got := c.wait(1, b.ID, 30*time.Second, db.BackfillSucceeded, db.BackfillFailed)
	store := c.stores[1]
	var states []string
	if err := store.RawReader().Select(&states, `SELECT state || ': ' || COALESCE(error, '') FROM attempts WHERE owner = ? ORDER BY attempt`, c.engs[0].owner); err != nil {
		t.Fatal(err)
	}
	if len(states) != 1 || !strings.HasPrefix(states[0], db.AttemptInterrupted+": ") {
		t.Errorf("the attempt taken over was recorded %q, want interrupted", states)
	}
	if got.State != db.BackfillSucceeded {
		t.Fatalf("backfill %s, want succeeded on the retry", got.State)
	}
	checkFinishedOnce(t, store, b.ID)
}

// logCount keeps the messages logged, by level.
type logCount struct {
	mu   sync.Mutex
	msgs map[slog.Level][]string
}

func (l *logCount) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCount) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logCount) WithGroup(string) slog.Handler            { return l }
func (l *logCount) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.msgs == nil {
		l.msgs = map[slog.Level][]string{}
	}
	l.msgs[r.Level] = append(l.msgs[r.Level], r.Message)
	return nil
}

// count is how many messages of level begin with prefix.
func (l *logCount) count(level slog.Level, prefix string) int {
	n := 0
	for _, m := range l.messages(level) {
		if strings.HasPrefix(m, prefix) {
			n++
		}
	}
	return n
}

func (l *logCount) messages(level slog.Level) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs[level]...)
}
