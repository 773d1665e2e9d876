package web

import (
	"bufio"
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/tessera-dev/tessera/testkit/poll"
)

// TestReadSlotsBoundConcurrentReads: with 2 slots, of 6 GETs at once at
// most 2 are inside their handler together and all 6 are answered; an
// event stream, a POST and a static file take no slot (they run while the
// slots are full).
func TestReadSlotsBoundConcurrentReads(t *testing.T) {
	t.Parallel()
	e := echo.New()
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		if he, ok := err.(interface{ Error() string }); ok {
			_ = c.String(http.StatusServiceUnavailable, he.Error())
		}
	}
	e.Use(readSlots(2, nil))
	var inside, most, ran atomic.Int64
	release := make(chan struct{})
	slow := func(c echo.Context) error {
		n := inside.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		ran.Add(1)
		<-release
		inside.Add(-1)
		return c.String(http.StatusOK, "ok")
	}
	free := func(c echo.Context) error { return c.String(http.StatusOK, "free") }
	e.GET("/page", slow)
	e.GET("/backfills/x/stream", free)
	e.POST("/page", free)
	e.GET("/static/app.css", free)
	srv := httptest.NewServer(e)
	defer srv.Close()

	var wg sync.WaitGroup
	codes := make(chan int, 6)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := http.Get(srv.URL + "/page")
			if err != nil {
				t.Error(err)
				return
			}
			r.Body.Close()
			codes <- r.StatusCode
		}()
	}
	poll.Eventually(t, 10*time.Second, "two reads inside", func() bool { return inside.Load() == 2 })
	for _, req := range []struct{ method, path string }{{"GET", "/backfills/x/stream"}, {"POST", "/page"}, {"GET", "/static/app.css"}} {
		r, err := http.DefaultClient.Do(must(http.NewRequest(req.method, srv.URL+req.path, nil)))
		if err != nil || r.StatusCode != http.StatusOK {
			t.Fatalf("%s %s while the slots are full: %v %v", req.method, req.path, err, r)
		}
		r.Body.Close()
	}
	if n := ran.Load(); n != 2 {
		t.Errorf("%d reads ran while the slots were full, want 2", n)
	}
	close(release)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Errorf("a waiting read was answered %d", c)
		}
	}
	if most.Load() != 2 || ran.Load() != 6 {
		t.Errorf("%d reads inside at once at most, %d ran; want 2 and 6", most.Load(), ran.Load())
	}
}

func must(r *http.Request, err error) *http.Request {
	if err != nil {
		panic(err)
	}
	return r
}

// TestStalledReaderHoldsNoSlot: with one slot (on a worker of a pool, and
// without one), a client that asks for a large page and stops reading
// does not keep other reads waiting: the slot bounds the reads computing,
// not the bytes on their way to a slow client. The stalled client still
// gets its whole page once it reads, and a read that panics is answered
// 500 (the buffered response gives way to echo's Recover).
func TestStalledReaderHoldsNoSlot(t *testing.T) {
	t.Parallel()
	eachReadPool(t, 5, func(t *testing.T, e *echo.Echo) {
		big := bytes.Repeat([]byte("tessera "), 8<<20) // 64 MiB: more than the sockets buffer
		e.GET("/big", func(c echo.Context) error { return c.Blob(http.StatusOK, "text/plain", big) })
		e.GET("/small", func(c echo.Context) error { return c.String(http.StatusOK, "small") })
		e.GET("/panic", func(echo.Context) error { panic("a read gone wrong") })
		srv := httptest.NewServer(e)
		defer srv.Close()

		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		// Wait until the server sends (it is then writing /big).
		first := make([]byte, 1)
		if _, err := io.ReadFull(conn, first); err != nil {
			t.Fatal(err)
		}
		client := &http.Client{Timeout: 10 * time.Second}
		for _, path := range []string{"/small", "/small"} {
			r, err := client.Get(srv.URL + path)
			if err != nil {
				t.Fatalf("GET %s while a client stalls on /big: %v", path, err)
			}
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if r.StatusCode != http.StatusOK || string(b) != "small" {
				t.Fatalf("GET %s while a client stalls on /big: %d %q", path, r.StatusCode, b)
			}
		}
		if r, err := client.Get(srv.URL + "/panic"); err != nil || r.StatusCode != http.StatusInternalServerError {
			t.Fatalf("a read that panicked: %v %v, want 500", err, r)
		} else {
			r.Body.Close()
		}
		// The stalled client reads at last: its whole page.
		resp, err := http.ReadResponse(bufio.NewReader(io.MultiReader(bytes.NewReader(first), conn)), nil)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != int64(len(big)) {
			t.Fatalf("the stalled client got %d bytes (%v), want %d", n, err, len(big))
		}
	})
}

// TestReadAbortIsQuiet: a read that panics with http.ErrAbortHandler (on
// a worker, and without a pool) aborts its response, as net/http does for
// any handler: the client gets no answer at all, not a 500 nor what the
// read wrote before, and the slot serves the next read.
func TestReadAbortIsQuiet(t *testing.T) {
	t.Parallel()
	eachReadPool(t, 4, func(t *testing.T, e *echo.Echo) {
		e.GET("/abort", func(c echo.Context) error {
			_ = c.String(http.StatusOK, "half a page")
			panic(http.ErrAbortHandler)
		})
		e.GET("/small", func(c echo.Context) error { return c.String(http.StatusOK, "small") })
		srv := httptest.NewUnstartedServer(e)
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.Start()
		defer srv.Close()
		client := &http.Client{Timeout: 10 * time.Second}
		if r, err := client.Get(srv.URL + "/abort"); err == nil {
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			t.Fatalf("an aborted read was answered %d %q, want no answer", r.StatusCode, b)
		}
		r, err := client.Get(srv.URL + "/small")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != http.StatusOK || string(b) != "small" {
			t.Fatalf("after an aborted read: %d %q", r.StatusCode, b)
		}
	})
}

// TestReadSentWithItsLength: a read's buffered answer is sent whole, with
// its Content-Length (not in chunks) and the headers its handler set; a
// HEAD is answered without a body; a 204 has no length.
func TestReadSentWithItsLength(t *testing.T) {
	t.Parallel()
	e := echo.New()
	e.Use(readSlots(1, nil))
	body := strings.Repeat("partition ", 10_000) // 100 KB: net/http alone would chunk it
	page := func(c echo.Context) error {
		c.Response().Header().Set("X-Page", "grid")
		return c.String(http.StatusOK, body)
	}
	e.GET("/page", page)
	e.HEAD("/page", page) // as the server's router does (a HEAD is a GET without its body)
	e.GET("/none", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	srv := httptest.NewServer(e)
	defer srv.Close()

	r, err := http.Get(srv.URL + "/page")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusOK || string(got) != body || r.ContentLength != int64(len(body)) || len(r.TransferEncoding) != 0 || r.Header.Get("X-Page") != "grid" {
		t.Errorf("GET: %d, %d bytes, Content-Length %d, Transfer-Encoding %v, X-Page %q; want 200, %d bytes with their length, not chunked, X-Page grid",
			r.StatusCode, len(got), r.ContentLength, r.TransferEncoding, r.Header.Get("X-Page"), len(body))
	}
	r, err = http.Head(srv.URL + "/page")
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusOK || len(got) != 0 {
		t.Errorf("HEAD: %d with %d bytes, want 200 without a body", r.StatusCode, len(got))
	}
	r, err = http.Get(srv.URL + "/none")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusNoContent || r.Header.Get("Content-Length") != "" {
		t.Errorf("204: %d with Content-Length %q, want 204 without one", r.StatusCode, r.Header.Get("Content-Length"))
	}
}

// eachReadPool runs test as two parallel subtests, "without pool" and "on
// a worker" (of a pool at nice, a value no other test's pool uses), each
// with an echo whose reads take one slot, behind echo's Recover (its log
// discarded: the recovered panics' stacks).
func eachReadPool(t *testing.T, nice int, test func(t *testing.T, e *echo.Echo)) {
	pool, err := readPoolFor(nice, 1)
	if err != nil {
		if runtime.GOOS == "linux" {
			t.Fatal(err)
		}
		t.Logf("no read pool on this system (%v): only the case without", err)
	}
	for name, pool := range map[string]*readPool{"without pool": nil, "on a worker": pool} {
		if pool == nil && name == "on a worker" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := echo.New()
			e.Logger.SetOutput(io.Discard)
			e.Use(middleware.Recover())
			e.Use(readSlots(1, pool))
			test(t, e)
		})
	}
}

// TestReadThatPanicsMidPageIsAnswered500: a read that wrote part of its
// page and then panicked is answered 500 by echo's Recover, not the part
// it wrote sent as a whole 200 page (its buffer is dropped), on a worker
// and without a pool.
func TestReadThatPanicsMidPageIsAnswered500(t *testing.T) {
	t.Parallel()
	eachReadPool(t, 9, func(t *testing.T, e *echo.Echo) {
		e.GET("/half", func(c echo.Context) error {
			_ = c.HTML(http.StatusOK, "<p>half a page")
			panic("a read gone wrong halfway")
		})
		srv := httptest.NewServer(e)
		defer srv.Close()
		r, err := http.Get(srv.URL + "/half")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != http.StatusInternalServerError || strings.Contains(string(b), "half a page") {
			t.Errorf("a read that panicked halfway: %d %q, want 500 without its half page", r.StatusCode, b)
		}
	})
}
