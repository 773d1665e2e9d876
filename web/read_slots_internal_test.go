package web

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

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
