//go:build linux

package web

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/testkit/poll"
)

// niceOf reads the nice value of a thread or process from its stat file in
// /proc (its 19th field; the second, the command, is in parentheses and
// may hold spaces).
func niceOf(t *testing.T, stat string) int {
	t.Helper()
	b, err := os.ReadFile(stat)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	n, err := strconv.Atoi(fields[19-3])
	if err != nil {
		t.Fatalf("%s: %v", stat, err)
	}
	return n
}

// TestReadsComputeOnLowerPriorityThreads: with a pool at nice 7, a GET that
// takes a read slot computes on a thread 7 nicer than the process, a POST
// (no slot) at the process's own priority; GOMAXPROCS grew by the pool's
// worker; a read that panics is answered 500 by the Recover middleware on
// the request's goroutine, and the worker goes on serving reads.
func TestReadsComputeOnLowerPriorityThreads(t *testing.T) {
	t.Parallel()
	const nice = 7 // a value no other test's pool uses
	base := niceOf(t, "/proc/self/stat")
	pool, err := readPoolFor(nice, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got < startProcs+pool.workers {
		t.Errorf("GOMAXPROCS %d with %d read workers started, want at least %d", got, pool.workers, startProcs+pool.workers)
	}
	e := echo.New()
	e.Logger.SetOutput(io.Discard) // the recovered panic's stack
	e.Use(middleware.Recover())
	e.Use(readSlots(1, pool))
	threadNice := func(c echo.Context) error {
		// The handler's goroutine stays on its thread while it reads.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		return c.String(http.StatusOK, strconv.Itoa(niceOf(t, "/proc/thread-self/stat")))
	}
	e.GET("/nice", threadNice)
	e.POST("/nice", threadNice)
	e.GET("/panic", func(echo.Context) error { panic("a read gone wrong") })
	srv := httptest.NewServer(e)
	defer srv.Close()

	ask := func(method, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	want := strconv.Itoa(min(base+nice, MaxReadNice))
	if code, body := ask("GET", "/nice"); code != http.StatusOK || body != want {
		t.Errorf("GET computed at nice %q (%d), want %s", body, code, want)
	}
	if code, body := ask("POST", "/nice"); code != http.StatusOK || body != strconv.Itoa(base) {
		t.Errorf("POST computed at nice %q (%d), want the process's %d", body, code, base)
	}
	if code, _ := ask("GET", "/panic"); code != http.StatusInternalServerError {
		t.Errorf("a read that panicked was answered %d, want 500", code)
	}
	for range 3 {
		if code, body := ask("GET", "/nice"); code != http.StatusOK || body != want {
			t.Fatalf("after a panic, GET answered %d %q, want 200 %s", code, body, want)
		}
	}
}

// TestReadPoolsGrowAndShare: a second server asking for more slots at the
// same nice value grows the one pool; asking for fewer starts nothing.
func TestReadPoolsGrowAndShare(t *testing.T) {
	t.Parallel()
	const nice = 3 // a value no other test's pool uses
	a, err := readPoolFor(nice, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := readPoolFor(nice, 2)
	if err != nil {
		t.Fatal(err)
	}
	c, err := readPoolFor(nice, 1)
	if err != nil {
		t.Fatal(err)
	}
	if a != b || b != c || c.workers != 2 {
		t.Errorf("pools %p %p %p with %d workers, want one pool of 2", a, b, c, c.workers)
	}
}

// TestReadLeavesASharedPoolWithItsClient: two servers of one process share
// a pool of one worker; while one's read holds the worker, a read of the
// other whose client gives up is answered without ever running (it does
// not wait for the worker, then run for nobody), and once the worker is
// free the other server's reads run again.
func TestReadLeavesASharedPoolWithItsClient(t *testing.T) {
	t.Parallel()
	pool, err := readPoolFor(6, 1) // a nice value no other test's pool uses
	if err != nil {
		t.Fatal(err)
	}
	hold, held := make(chan struct{}), make(chan struct{})
	a := echo.New()
	a.Use(readSlots(1, pool))
	a.GET("/slow", func(c echo.Context) error {
		close(held)
		<-hold
		return c.String(http.StatusOK, "slow")
	})
	b := echo.New()
	var gaveUp atomic.Int64 // reads answered 503: their client left before their turn
	b.HTTPErrorHandler = func(err error, c echo.Context) {
		var ue *handlers.UserError
		if errors.As(err, &ue) && ue.Status == http.StatusServiceUnavailable {
			gaveUp.Add(1)
		}
		_ = c.NoContent(http.StatusServiceUnavailable)
	}
	b.Use(readSlots(1, pool))
	var ran atomic.Int64
	b.GET("/page", func(c echo.Context) error {
		ran.Add(1)
		return c.String(http.StatusOK, "page")
	})
	srvA, srvB := httptest.NewServer(a), httptest.NewServer(b)
	defer srvA.Close()
	defer srvB.Close()

	slowDone := make(chan error, 1)
	go func() {
		r, err := http.Get(srvA.URL + "/slow")
		if err == nil {
			r.Body.Close()
		}
		slowDone <- err
	}()
	<-held // the worker is A's
	impatient := &http.Client{Timeout: 300 * time.Millisecond}
	if r, err := impatient.Get(srvB.URL + "/page"); err == nil {
		r.Body.Close()
		t.Fatalf("B's read was answered %d while the one worker was A's", r.StatusCode)
	}
	// The server learns that the client left when it reads the closed
	// connection; only then is the worker let go.
	poll.Eventually(t, 10*time.Second, "B's read given up", func() bool { return gaveUp.Load() == 1 })
	close(hold)
	if err := <-slowDone; err != nil {
		t.Fatal(err)
	}
	r, err := http.Get(srvB.URL + "/page")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusOK || ran.Load() != 1 {
		t.Errorf("B's next read: %d, and B's handler ran %d times; want 200 and once (the read whose client left never ran)", r.StatusCode, ran.Load())
	}
}

// TestReadThatEndsItsGoroutine: a read on a worker that calls
// runtime.Goexit (t.FailNow in a test's handler would) is answered 500, as
// a panic is, instead of leaving its request waiting forever, and the
// pool's reads go on being served by the worker that took its place.
func TestReadThatEndsItsGoroutine(t *testing.T) {
	t.Parallel()
	pool, err := readPoolFor(8, 1) // a nice value no other test's pool uses
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	e.Logger.SetOutput(io.Discard)
	e.Use(middleware.Recover())
	e.Use(readSlots(1, pool))
	e.GET("/goexit", func(echo.Context) error { runtime.Goexit(); return nil })
	e.GET("/nice", func(c echo.Context) error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		return c.String(http.StatusOK, strconv.Itoa(niceOf(t, "/proc/thread-self/stat")))
	})
	srv := httptest.NewServer(e)
	defer func() {
		// Without its answer a request waits forever, and Close with it:
		// the test's failure is said, not a hang until go test's timeout.
		closed := make(chan struct{})
		go func() { srv.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
		}
	}()
	client := &http.Client{Timeout: 10 * time.Second}
	base := niceOf(t, "/proc/self/stat")
	for range 2 {
		r, err := client.Get(srv.URL + "/goexit")
		if err != nil {
			t.Fatalf("a read that ended its goroutine: %v (no answer)", err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusInternalServerError {
			t.Fatalf("a read that ended its goroutine was answered %d, want 500", r.StatusCode)
		}
		r, err = client.Get(srv.URL + "/nice")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if want := strconv.Itoa(min(base+8, MaxReadNice)); r.StatusCode != http.StatusOK || string(b) != want {
			t.Fatalf("the next read: %d %q, want 200 %s (on a worker again)", r.StatusCode, b, want)
		}
	}
}
