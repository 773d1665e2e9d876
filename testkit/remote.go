package testkit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/jobs"
)

// AsyncRemote is a remote engine for the http executor that accepts every
// work it is sent with 202 (it would report later through the run's
// callback) and hands the works to the test in order; a body that is not a
// work is a 400. It stops when the test ends.
type AsyncRemote struct {
	URL   string
	works chan jobs.Work
}

// NewAsyncRemote starts an AsyncRemote.
func NewAsyncRemote(t testing.TB) *AsyncRemote {
	r := &AsyncRemote{works: make(chan jobs.Work, 1000)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var work jobs.Work
		if err := json.NewDecoder(req.Body).Decode(&work); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.works <- work
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// Executor is the executor field of an asset (Asset) whose works go to r.
func (r *AsyncRemote) Executor() string { return fmt.Sprintf("executor: {http: {url: %q}}", r.URL) }

// Next waits up to 30 s for the next work the remote was sent.
func (r *AsyncRemote) Next(t testing.TB) jobs.Work {
	t.Helper()
	select {
	case w := <-r.works:
		return w
	case <-time.After(30 * time.Second):
		t.Fatal("the remote engine got no work in 30 s")
		return jobs.Work{}
	}
}

// Pending is how many works the remote got that Next has not returned.
func (r *AsyncRemote) Pending() int { return len(r.works) }

// WithAsyncRemote is a server whose one asset, a.remote (daily, January
// 2025, one attempt per run), is built by an AsyncRemote, its engine
// started: what a test of the asynchronous executor's callback needs.
func WithAsyncRemote(t testing.TB) (*Env, *AsyncRemote) {
	t.Helper()
	remote := NewAsyncRemote(t)
	env := WithAssets(t,
		Asset("a.remote", "{daily: {start: 2025-01-01, end: 2025-02-01}}", "retries: {max_attempts: 1}", remote.Executor()),
	)
	env.StartEngine(t, jobs.Options{})
	return env, remote
}
