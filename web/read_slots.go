package web

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/handlers"
)

// DefaultReadSlots is how many page and API reads are computed at once when
// Options.ReadSlots is 0: one core fewer than the process may use (at
// least one), so that the backfill engine, which shares the process,
// always has a core while any number of readers wait their turn. (The
// cores as GOMAXPROCS said before read workers raised it: read_priority.go.)
func DefaultReadSlots() int { return max(startProcs-1, 1) }

// readSlots bounds the GET and HEAD requests computed at once to n. A
// crowd of readers (a wall of dashboards, scripts polling in a loop) then
// queues for a slot instead of taking every core from the engine: with 16
// readers reading as fast as they are answered, a backfill ran at 0.2–0.4
// of its speed alone. A read waits for a slot as long as its client does
// (its context). Event streams, which stay open, static files, health
// checks and metrics take no slot. With a pool, a read computes on one of
// its workers, at their lower priority (read_priority.go). Its response is
// sent after the slot is given back (computeRead).
func readSlots(n int, pool *readPool) echo.MiddlewareFunc {
	slots := make(chan struct{}, n)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if (r.Method != http.MethodGet && r.Method != http.MethodHead) || slotFree(r.URL.Path) {
				return next(c)
			}
			out, buf, ok := computeRead(c, slots, pool, next)
			if !ok {
				return &handlers.UserError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "the server was busy and the request ended before its turn; try again"}
			}
			// The slot (and the worker) are free again: what the read
			// wrote is sent now, as slowly as its client takes it. A read
			// that panicked sends nothing of what it wrote (a page cut
			// short would arrive as a whole 200): Recover answers 500.
			if out.panicked {
				res := c.Response()
				res.Committed, res.Status, res.Size = false, 0, 0
			} else {
				buf.send(r.Method == http.MethodHead)
			}
			buf.release()
			return out.result()
		}
	}
}

// computeRead runs next in a read slot (on a worker of pool, when there is
// one) with the response written to a buffer, and gives the slot back
// before the buffer is sent: a slot bounds the reads computing, not those
// being delivered. Were the response written to the connection within the
// slot, one client that stops reading (a stalled or deliberately slow one,
// a few pipelined requests for a large page) would hold it for as long as
// its connection stays open, and with one slot no other page or API read
// would be answered. ok is false when the client left before its turn.
func computeRead(c echo.Context, slots chan struct{}, pool *readPool, next echo.HandlerFunc) (out readOutcome, buf *readBuffer, ok bool) {
	r := c.Request()
	select {
	case slots <- struct{}{}:
	case <-r.Context().Done():
		// The client left (or its deadline passed) while waiting.
		return out, nil, false
	}
	defer func() { <-slots }()
	if r.Context().Err() != nil {
		// Given a slot just as its client left: no one to answer.
		return out, nil, false
	}
	res := c.Response()
	b := &readBuffer{w: res.Writer, body: bodies.Get().(*bytes.Buffer)}
	res.Writer = b
	defer func() { res.Writer = b.w }()
	fn := func() error { return next(c) }
	if pool == nil {
		return runRead(fn), b, true
	}
	if out, ok = pool.run(r.Context(), fn); !ok {
		// The client left while the workers were all busy (servers of
		// one process share a pool: read_priority.go).
		b.release()
		return out, nil, false
	}
	return out, b, true
}

// bodies are the buffers of reads' responses, reused: a page is 50–300 KB.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxKeptBody is the largest buffer kept for reuse; a larger one (a long
// API page) is left to the GC.
const maxKeptBody = 4 << 20

// readBuffer holds a read's response (its status and body; its header is
// the connection's own, sent with the status) until send writes it out.
type readBuffer struct {
	w      http.ResponseWriter
	status int
	body   *bytes.Buffer
}

func (b *readBuffer) Header() http.Header { return b.w.Header() }

func (b *readBuffer) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *readBuffer) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

// Flush does nothing: the whole response is sent when the read is done.
func (b *readBuffer) Flush() {}

// send writes the buffered response to the connection (nothing when the
// read wrote nothing: its error is answered by echo's error handler), with
// its length: the whole body is known, so it is not sent in chunks. head:
// the request was a HEAD, whose length is the GET's, unknown here.
func (b *readBuffer) send(head bool) {
	if b.status == 0 {
		return
	}
	h := b.w.Header()
	if !head && h.Get("Content-Length") == "" && h.Get("Transfer-Encoding") == "" && bodyAllowed(b.status) {
		h.Set("Content-Length", strconv.Itoa(b.body.Len()))
	}
	b.w.WriteHeader(b.status)
	_, _ = b.body.WriteTo(b.w) // a client gone is no error of the read's
}

// release gives the body's buffer back for another read.
func (b *readBuffer) release() {
	if b.body != nil && b.body.Cap() <= maxKeptBody {
		b.body.Reset()
		bodies.Put(b.body)
	}
	b.body = nil
}

// bodyAllowed says whether a response of status may have a body (RFC 9110:
// not 1xx, 204 or 304).
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// slotFree says whether a GET of path takes no read slot: the event
// streams (held open for as long as a page is), static files, health
// checks and the metrics scrape.
func slotFree(path string) bool {
	return strings.HasSuffix(path, "/stream") || strings.HasPrefix(path, "/static/") ||
		path == "/healthz" || path == "/readyz" || path == MetricsPath || path == "/favicon.ico"
}
