package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
)

// AutomationResult is the JSON line of tessera bench automation.
type AutomationResult struct {
	Bench          string  `json:"bench"`
	Schedules      int     `json:"schedules"`
	Cron           string  `json:"cron"`
	DurationS      float64 `json:"duration_s"`
	ExpectedTicks  int     `json:"expected_ticks"`
	LaunchedTicks  int     `json:"launched_ticks"`
	TickLagP50Ms   float64 `json:"tick_lag_p50_ms"`
	TickLagP99Ms   float64 `json:"tick_lag_p99_ms"`
	TickLagMaxMs   float64 `json:"tick_lag_max_ms"`
	MissedTicks    int     `json:"missed_ticks"`
	DuplicateTicks int64   `json:"duplicate_ticks"`
	// Push events: Pushers clients post Events events (10 % of them a
	// repeated message id) to one sensor through the HTTP API.
	Pushers           int     `json:"push_clients"`
	PushEvents        int     `json:"push_events"`
	PushRepeated      int     `json:"push_repeated"`
	PushEventsPerS    float64 `json:"push_events_per_s"`
	PushLaunches      int64   `json:"push_launches"`
	DuplicateLaunches int64   `json:"duplicate_launches"`
}

// Automation runs n schedules that all fire at the same seconds (cron, by
// default every 10 s) for d through the real scheduler, controller and
// store in a temporary database, each tick launching a one-partition
// backfill on a noop executor; it measures the lag from a tick's
// scheduled_for to its backfill's creation, and counts missed and
// duplicate ticks. prof, when not nil, receives a CPU profile of it all.
func Automation(ctx context.Context, n int, cron string, d time.Duration, prof *os.File) (AutomationResult, error) {
	out := AutomationResult{Bench: "automation", Schedules: n, Cron: cron, DurationS: d.Seconds()}
	if prof != nil {
		if err := pprof.StartCPUProfile(prof); err != nil {
			return out, err
		}
		defer pprof.StopCPUProfile()
	}
	store, cleanup, err := tempStore("automation")
	if err != nil {
		return out, err
	}
	defer cleanup()
	// Each schedule builds an asset of its own, of one partition, as a team's
	// schedules do; the sensor's events each concern their own partition
	// of bench.push (a repeated message id, the same one). (Until this
	// session every schedule and event built the one partition of a single
	// asset: thousands of backfills queued on one lease, which measured
	// the controller's lease queue rather than the scheduler.)
	var b strings.Builder
	b.WriteString("assets:\n")
	for i := range n {
		fmt.Fprintf(&b, "  bench.s%04d:\n    partitions: {static: [only]}\n    retries: {max_attempts: 1}\n    executor: {demo: {duration: 1ms}}\n", i)
	}
	b.WriteString("  bench.push:\n    retries: {max_attempts: 1}\n    executor: {demo: {duration: 1ms}}\n    partitions:\n      static:\n")
	for i := range pushClients * pushEach {
		fmt.Fprintf(&b, "        - %s\n", pushPartition(i))
	}
	b.WriteString("sensors:\n  bench.push:\n    assets: [bench.push]\nschedules:\n")
	for i := range n {
		fmt.Fprintf(&b, "  s%04d: {cron: %q, assets: [bench.s%04d], overlap: allow, catchup: {window: 1m, max_ticks: 100}}\n", i, cron, i)
	}
	ws, err := catalog.ParseWorkspace("bench.yaml", []byte(b.String()))
	if err != nil {
		return out, err
	}
	now := time.Now()
	if err := store.SyncWorkspace(ctx, ws, "bench", now); err != nil {
		return out, err
	}
	ids, err := store.AssetIDs(ctx)
	if err != nil {
		return out, err
	}
	eng, stop, err := startBenchEngine(ctx, store, ws, ids, 64, &lastReturn{})
	if err != nil {
		return out, err
	}
	defer stop()
	sched := jobs.NewScheduler(eng, slog.New(slog.NewTextHandler(io.Discard, nil)))
	// Every schedule is seen first now, so it owes the ticks in (start, end].
	start := time.Now()
	if err := sched.Evaluate(ctx, start); err != nil {
		return out, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); sched.Run(rctx) }()
	end := start.Add(d)
	select {
	case <-time.After(time.Until(end)):
	case <-ctx.Done():
		cancel()
		<-done
		return out, ctx.Err()
	}
	c, err := catalog.ParseCron(cron, "")
	if err != nil {
		cancel()
		<-done
		return out, err
	}
	due, _ := c.Between(start, end, 0)
	out.ExpectedTicks = n * len(due)
	// Let the last burst be launched (each tick is recorded after its
	// backfill), at most 30 s.
	var lags []db.TickLag
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if lags, err = store.TickLags(ctx); err != nil {
			break
		}
		if len(lags) >= out.ExpectedTicks {
			break
		}
	}
	cancel()
	<-done
	if err != nil {
		return out, err
	}
	var ms []time.Duration
	for _, l := range lags {
		if l.ScheduledFor <= db.Millis(end) {
			ms = append(ms, time.Duration(l.CreatedAt-l.ScheduledFor)*time.Millisecond)
		}
	}
	slices.Sort(ms)
	out.LaunchedTicks = len(ms)
	out.MissedTicks = max(out.ExpectedTicks-len(ms), 0)
	out.TickLagP50Ms, out.TickLagP99Ms = percentileMs(ms, 0.5), percentileMs(ms, 0.99)
	if len(ms) > 0 {
		out.TickLagMaxMs = round(float64(ms[len(ms)-1].Microseconds()) / 1000)
	}
	made, err := store.ScheduledBackfills(ctx)
	if err != nil {
		return out, err
	}
	out.DuplicateTicks = made - int64(len(lags))
	return out, pushEvents(ctx, eng, store, ws, ids, &out)
}

// The push part: pushClients clients push pushEach events each.
const pushClients, pushEach = 16, 250

// pushPartition is the partition of bench.push the i-th distinct event
// concerns.
func pushPartition(i int) string { return fmt.Sprintf("p%05d", i) }

// pushEvents has 16 clients post 250 events each to bench.push through the
// real HTTP API (POST /api/v1/sensors/bench.push/events with an operator's
// token, as a sender outside would), one in ten repeating another client's
// message id (with its body), and counts the backfills: one per distinct
// message id, or some launched twice.
func pushEvents(ctx context.Context, eng *jobs.Engine, store *db.Store, ws *catalog.Workspace, ids map[string]int64, out *AutomationResult) error {
	const clients, each = pushClients, pushEach
	out.Pushers, out.PushEvents = clients, clients*each
	token, err := operatorToken(ctx, store)
	if err != nil {
		return err
	}
	srv := startPageServer(store, &handlers.Workspace{Workspace: ws, Source: "bench", IDs: ids}, eng)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: time.Minute}
	url := srv.URL + "/api/v1/sensors/bench.push/events"
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				from, k := c, i
				if i%10 == 9 {
					from, k = (c+1)%clients, i-1 // another client's event, sent again
				}
				body := fmt.Sprintf(`{"message_id": "c%d-%d", "partitions": [%q]}`, from, k, pushPartition(from*each+k))
				if err := postEvent(ctx, client, url, token, body); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	out.PushEventsPerS = round(float64(out.PushEvents) / time.Since(start).Seconds())
	out.PushRepeated = clients * (each / 10)
	n, err := store.SensorLaunches(ctx, "bench.push")
	if err != nil {
		return err
	}
	out.PushLaunches = n
	out.DuplicateLaunches = n - int64(out.PushEvents-out.PushRepeated)
	return nil
}

// postEvent posts one event; anything but 200 (a repeat) or 201 is an error.
func postEvent(ctx context.Context, client *http.Client, url, token, body string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("POST %s %s: %d %s", url, body, resp.StatusCode, b)
	}
	return nil
}
