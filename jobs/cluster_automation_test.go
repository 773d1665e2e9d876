package jobs

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit/poll"
)

// Schedules and sensors with several instances on one PostgreSQL database
// (clusterEnv): ticks launched once, by the holder of the lease; a pushed
// event launches once whichever instances receive it.

// A schedule ticking every second on three instances launches each tick
// once: one instance holds the lease and evaluates; when it dies, another
// takes the lease over after its TTL and catches the ticks up, none twice
// and none lost.
func TestClusterScheduleTicksOnce(t *testing.T) {
	t.Parallel()
	ws := schedOnlyAssets() + `schedules:
  every_second:
    cron: "* * * * * *"
    assets: [ref.regions]
    overlap: allow
    catchup: {window: 1m, max_ticks: 100}
`
	c := newClusterEnv(t, 3, ws, func(i int) Options {
		return Options{Executor: funcExec(func(context.Context, Work) Result { return Result{} }), LeaseTTL: time.Second}
	})
	for i := range 3 {
		c.start(i, true)
	}
	ctx := context.Background()
	rd := 0 // the store the test reads through, of an instance alive
	launched := func() []db.Tick {
		ts, err := c.stores[rd].ScheduleTicks(ctx, "every_second", nil, nil, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var out []db.Tick
		for _, tk := range ts {
			if tk.Outcome == db.TickLaunched {
				out = append(out, tk)
			}
		}
		return out
	}
	poll.Eventually(t, 20*time.Second, "4 ticks launched", func() bool { return len(launched()) >= 4 })
	leader := -1
	poll.Eventually(t, 20*time.Second, "one leader", func() bool {
		n := 0
		for i, e := range c.engs {
			if e.Leading() {
				leader, n = i, n+1
			}
		}
		return n == 1
	})
	c.kill(leader)
	rd = (leader + 1) % 3
	before := len(launched())
	poll.Eventually(t, 20*time.Second, "4 more ticks after the leader died", func() bool { return len(launched()) >= before+4 })
	other := (leader + 1) % 3
	ts := launched()
	seen := map[int64]bool{}
	var first, last int64
	for _, tk := range ts {
		if seen[tk.ScheduledFor] {
			t.Errorf("tick %s launched twice", tk.ID)
		}
		seen[tk.ScheduledFor] = true
		if first == 0 || tk.ScheduledFor < first {
			first = tk.ScheduledFor
		}
		last = max(last, tk.ScheduledFor)
	}
	if int64(len(seen)) != (last-first)/1000+1 {
		t.Errorf("%d ticks launched from %d to %d: some second was lost", len(seen), first, last)
	}
	var keys []string
	if err := c.stores[other].RawReader().Select(&keys, `SELECT request_key FROM backfills WHERE created_by = ?`, "schedule:every_second"); err != nil {
		t.Fatal(err)
	}
	byKey := map[string]bool{}
	for _, k := range keys {
		if byKey[k] {
			t.Errorf("two backfills for tick %q", k)
		}
		byKey[k] = true
	}
	if len(keys) < len(ts) {
		t.Errorf("%d backfills for %d launched ticks", len(keys), len(ts))
	}
}

// schedOnlyAssets is the schedule tests' assets.
func schedOnlyAssets() string { return strings.TrimSuffix(schedAssets, "schedules:\n") }

// The same pushed event sent to three instances at once (a sender's
// retries spread by a load balancer) launches one backfill, and every
// sender is answered with that first outcome, none with an error.
func TestClusterPushSameMessageOnce(t *testing.T) {
	t.Parallel()
	ws := schedOnlyAssets() + "sensors:\n  arrivals:\n    assets: [ref.regions]\n"
	c := newClusterEnv(t, 3, ws, func(int) Options { return Options{} })
	ctx := context.Background()
	for round := range 5 {
		msg := fmt.Sprintf("m-%d", round)
		var wg sync.WaitGroup
		res := make([]EventResult, 6)
		errs := make([]error, 6)
		startLine := make(chan struct{})
		for i := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-startLine
				res[i], errs[i] = c.engs[i%3].Push(ctx, "arrivals", PushEvent{MessageID: msg, Partitions: []string{"eu"}}, "bot")
			}()
		}
		close(startLine)
		wg.Wait()
		launched := 0
		for i := range 6 {
			if errs[i] != nil {
				t.Fatalf("%s, sender %d: %v", msg, i, errs[i])
			}
			if res[i].Event.BackfillID == nil || *res[i].Event.BackfillID != *res[0].Event.BackfillID {
				t.Errorf("%s, sender %d answered %+v, sender 0 %+v", msg, i, res[i].Event, res[0].Event)
			}
			if !res[i].Replayed {
				launched++
			}
		}
		if launched != 1 {
			t.Errorf("%s: %d senders told it launched, want 1", msg, launched)
		}
		if n := countRows(t, c.stores[0], `SELECT COUNT(*) FROM backfills WHERE request_key = ?`, "sensor:arrivals\x1fmsg:"+msg); n != 1 {
			t.Errorf("%s: %d backfills", msg, n)
		}
	}
}
