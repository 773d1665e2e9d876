package jobs

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/catalog"
)

// TestHTTPExecutorRedirectStaysOnItsHost: a redirect to another host
// (scheme, host and port) is not followed, so that host never sees the
// executor's bearer token, custom headers or work; the attempt fails saying
// why and what to do. A redirect on the same host is followed, headers and
// all.
func TestHTTPExecutorRedirectStaysOnItsHost(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var other []http.Header // what the second host saw
	second := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		other = append(other, r.Header.Clone())
		mu.Unlock()
		io.WriteString(w, `{}`)
	}))
	defer second.Close()
	var sameHost http.Header
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/token":
			io.WriteString(w, `{"access_token":"tok-secret"}`)
		case "/away":
			http.Redirect(w, r, second.URL+"/run", http.StatusTemporaryRedirect)
		case "/old":
			http.Redirect(w, r, "/new", http.StatusTemporaryRedirect)
		case "/new":
			mu.Lock()
			sameHost = r.Header.Clone()
			mu.Unlock()
			io.WriteString(w, `{}`)
		}
	}))
	defer first.Close()
	def := func(path string) *catalog.Asset {
		return &catalog.Asset{Key: "a.http", Executor: catalog.Executor{Kind: catalog.ExecutorHTTP, HTTP: &catalog.HTTPExecutor{
			URL: first.URL + path, TokenURL: first.URL + "/token", Timeout: 5 * time.Second,
			Headers: map[string]string{"X-Api-Key": "header-secret"},
		}}}
	}

	res := (&HTTPExecutor{}).Execute(context.Background(), Work{RunID: "run_r", Partitions: []string{"p1"}, Def: def("/away")})
	mu.Lock()
	for _, h := range other {
		t.Errorf("the second host got a request with Authorization %q and X-Api-Key %q", h.Get("Authorization"), h.Get("X-Api-Key"))
	}
	mu.Unlock()
	if res.Err == nil {
		t.Fatalf("a redirect to another host succeeded: %+v", res)
	}
	for _, want := range []string{"redirected to " + second.URL + "/run", "another host", "url"} {
		if !strings.Contains(res.Err.Error(), want) {
			t.Errorf("error %q lacks %q", res.Err, want)
		}
	}

	res = (&HTTPExecutor{}).Execute(context.Background(), Work{RunID: "run_s", Partitions: []string{"p1"}, Def: def("/old")})
	if res.Err != nil {
		t.Fatalf("a redirect on the same host failed: %v", res.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	if sameHost.Get("Authorization") != "Bearer tok-secret" || sameHost.Get("X-Api-Key") != "header-secret" {
		t.Errorf("after a same-host redirect: Authorization %q, X-Api-Key %q", sameHost.Get("Authorization"), sameHost.Get("X-Api-Key"))
	}
}
