package handlers_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// TestStreamSubscribersReturnToZero opens many live streams, closes them and
// checks the broker forgets every one; beyond the bound, streams are refused.
func TestStreamSubscribersReturnToZero(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, false)
	b := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-02", 1)
	br := eng.Broker()
	br.SetMax(40)
	env.Handler.MaxStreamsPerUser = 100 // one token opens them all
	token := env.AdminToken()
	ctx, cancel := context.WithCancel(t.Context())
	var bodies []io.ReadCloser
	paths := []string{"/backfills/" + b.ID + "/stream", "/backfills/stream"}
	for i := range 40 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.URL+paths[i%2], nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("stream %d: %d %s", i, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		bodies = append(bodies, resp.Body)
	}
	if n := br.Count(); n != 40 {
		t.Fatalf("%d subscribers, want 40", n)
	}
	// Full: the next stream is refused, not queued.
	resp, err := env.Get("/backfills/" + b.ID + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("stream beyond the bound: status %d", resp.StatusCode)
	}
	// A change reaches a subscriber as an update event.
	if _, err := eng.Transition(t.Context(), b.ID, jobs.ActPause, 0, false, "tester"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	got := ""
	for !strings.Contains(got, "event: update\ndata: changed") {
		n, err := bodies[0].Read(buf)
		if err != nil {
			t.Fatalf("read stream: %v (got %q)", err, got)
		}
		got += string(buf[:n])
	}
	cancel()
	for _, b := range bodies {
		b.Close()
	}
	testkit.Eventually(t, 20*time.Second, "no subscriber left after every stream closed", func() bool { return br.Count() == 0 })
}

// TestStreamCoalescesAfterItsFirstEvent: a change right after a page's
// stream connected comes StreamMinInterval after the stream's first event,
// not on its heels, when the partials that first event made the page fetch
// would still be in flight (htmx then loses it: the UI audit saw a pause
// made right after the page loaded leave the badge on Running).
func TestStreamCoalescesAfterItsFirstEvent(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, false)
	b := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-02", 1)
	// The gap is measured from before the stream was asked for: the server
	// sends "connected" after that, and the change at least
	// StreamMinInterval after "connected". (Measured from when this side
	// read "connected", a loaded machine that read it late saw 250 ms.)
	asked := time.Now()
	resp := openStream(t, env, b.ID)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	next := func(want string) time.Time {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("read stream: %v", err)
			}
			if strings.TrimSpace(line) == want {
				return time.Now()
			}
		}
	}
	next("data: connected")
	if _, err := eng.Transition(t.Context(), b.ID, jobs.ActPause, 0, false, "tester"); err != nil {
		t.Fatal(err)
	}
	if gap := next("data: changed").Sub(asked); gap < handlers.StreamMinInterval {
		t.Fatalf("the change came %s after the first event, want at least %s", gap, handlers.StreamMinInterval)
	}
}

// TestStreamEndsWhenTheBackfillIsDone: a backfill page's stream says "done"
// (the page's sse-close) once the backfill has finished, after its last
// update, and ends, so that a page left open on a finished backfill holds
// no stream; the summary it then fetches takes away "the page updates by
// itself". Before, the stream stayed open (30 min, then reconnected).
func TestStreamEndsWhenTheBackfillIsDone(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, true)
	b := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-02", 1)
	resp := openStream(t, env, b.ID)
	body := readBody(t, resp) // ends when the stream does
	if !strings.HasSuffix(body, "event: update\ndata: changed\n\nevent: update\ndata: settled\n\nevent: done\ndata: finished\n\n") && !strings.HasSuffix(body, "data: connected\n\nevent: done\ndata: finished\n\n") {
		t.Fatalf("the stream ended with %q, want an update, a settling update, then done", body)
	}
	pgWaitState(t, env, b.ID, db.BackfillSucceeded)
	_, doc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/backfills/"+b.ID+"/summary")
	if p := doc.Find(`#bf-refresh[hx-swap-oob]`); p.Length() != 1 || strings.TrimSpace(p.Text()) != "" {
		t.Errorf("the finished backfill's summary does not clear the page's 'updates by itself' line")
	}
	// A finished backfill's page has no stream nor that line to begin with.
	_, doc = pgGet(t, env, env.Client(t, auth.RoleViewer), "/backfills/"+b.ID)
	if doc.Find(`[sse-connect]`).Length() != 0 || doc.Find(`[data-testid="refresh"]`).Length() != 0 {
		t.Errorf("a finished backfill's page streams or says it updates by itself")
	}
}

// openStream opens backfill id's live stream as an admin.
func openStream(t *testing.T, env *testkit.Env, id string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, env.URL+"/backfills/"+id+"/stream", nil)
	req.Header.Set("Authorization", "Bearer "+env.AdminToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream of %s: %d", id, resp.StatusCode)
	}
	return resp
}

// TestStreamSettlesAfterItsLastUpdate: a second after its last update,
// with nothing changed meanwhile, a stream sends one more ("settled"), so
// that a section whose request was in flight when the last update came
// (htmx then drops that update) fetches the state as it is.
func TestStreamSettlesAfterItsLastUpdate(t *testing.T) {
	t.Parallel()
	env, eng := pgEnv(t, false)
	b := pgCreateBF(t, eng, "t.daily", "2025-01-01", "2025-01-02", 1)
	resp := openStream(t, env, b.ID)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	nextData := func() (string, time.Time) {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("read stream: %v", err)
			}
			if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
				return d, time.Now()
			}
		}
	}
	if d, _ := nextData(); d != "connected" {
		t.Fatalf("first event %q", d)
	}
	if _, err := eng.Transition(t.Context(), b.ID, jobs.ActPause, 0, false, "tester"); err != nil {
		t.Fatal(err)
	}
	d, changed := nextData()
	if d != "changed" {
		t.Fatalf("after the pause: %q, want changed", d)
	}
	d, settled := nextData()
	if d != "settled" || settled.Sub(changed) < handlers.StreamSettle/2 {
		t.Fatalf("then %q %v after, want settled %v after", d, settled.Sub(changed), handlers.StreamSettle)
	}
}
