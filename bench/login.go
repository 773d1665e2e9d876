package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/web"
)

// LoginResult is the result line of `tessera bench login`.
type LoginResult struct {
	Bench       string         `json:"bench"`
	Concurrency int            `json:"concurrency"`
	Requests    int            `json:"requests"`
	HashSlots   int            `json:"hash_slots"`
	BaseRSSMB   float64        `json:"base_rss_mb"`
	PeakRSSMB   float64        `json:"peak_rss_mb"`
	P50ms       float64        `json:"p50_ms"`
	P99ms       float64        `json:"p99_ms"`
	Statuses    map[string]int `json:"statuses"`
	// GoodSignInStatus is the answer to the real user's sign-in sent while
	// the storm ran, from the address it signed in from before the storm
	// (303 when it got through).
	GoodSignInStatus int     `json:"good_sign_in_status"`
	GoodSignInMS     float64 `json:"good_sign_in_ms"`
	WallS            float64 `json:"wall_s"`
	TargetPeakRSSMB  float64 `json:"target_peak_rss_mb"`
}

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// Login starts the real server on a temporary database, behind a trusted
// proxy, and sends requests sign-ins for unknown names, concurrency at a
// time, each from an address of its own, with one real user's sign-in in
// the middle; slots is the password checks allowed at once (0: what serve
// would choose).
func Login(ctx context.Context, concurrency, requests, slots int) (LoginResult, error) {
	store, cleanup, err := tempStore("login")
	if err != nil {
		return LoginResult{}, err
	}
	defer cleanup()
	const password = "bench-password-1"
	h, srv, err := startLoginServer(ctx, store, slots, password)
	if err != nil {
		return LoginResult{}, err
	}
	defer srv.Close()
	srv.Config.ErrorLog = nil

	transport := &http.Transport{MaxIdleConnsPerHost: concurrency, MaxConnsPerHost: 0}
	defer transport.CloseIdleConnections()
	signIn := func(i int, name, pw string) (int, time.Duration, error) {
		return benchSignIn(ctx, transport, srv.URL, i, name, pw)
	}

	// The real user signs in once before the storm, as it would have done
	// on another day.
	if st, _, err := signIn(1<<20, "bench", password); err != nil || st != http.StatusSeeOther {
		return LoginResult{}, fmt.Errorf("the bench user's first sign-in: %d %v", st, err)
	}
	runtime.GC()
	res := LoginResult{Bench: "login", Concurrency: concurrency, Requests: requests, HashSlots: h.Auth.HashSlots(),
		BaseRSSMB: currentRSSMB(), Statuses: map[string]int{}, TargetPeakRSSMB: 300}
	var (
		mu    sync.Mutex
		lats  []time.Duration
		first error
		next  = make(chan int)
		wg    sync.WaitGroup
		stop  = make(chan struct{})
		peak  float64
	)
	go samplePeakRSS(stop, &mu, &peak) // VmHWM is the process's, this is the storm's
	t0 := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				st, d, err := signIn(i+1, fmt.Sprintf("nobody-%d", i), "wrong-password-1")
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				if err == nil {
					res.Statuses[strconv.Itoa(st)]++
					lats = append(lats, d)
				}
				mu.Unlock()
			}
		}()
	}
	good := make(chan struct{})
	go func() {
		defer close(good)
		// The real user signs in once half the storm is under way.
		time.Sleep(50 * time.Millisecond)
		st, d, err := signIn(1<<20, "bench", password)
		mu.Lock()
		defer mu.Unlock()
		if err != nil && first == nil {
			first = err
		}
		res.GoodSignInStatus, res.GoodSignInMS = st, round(float64(d.Microseconds())/1000)
	}()
	for i := range requests {
		next <- i
	}
	close(next)
	wg.Wait()
	<-good
	res.WallS = round(time.Since(t0).Seconds())
	close(stop)
	if first != nil {
		return res, first
	}
	slices.Sort(lats)
	res.P50ms, res.P99ms = percentileMs(lats, 0.50), percentileMs(lats, 0.99)
	res.PeakRSSMB = max(peak, currentRSSMB())
	return res, nil
}

// percentileMs is the p-th percentile of the sorted lats, in milliseconds
// (0 when there are none).
func percentileMs(lats []time.Duration, p float64) float64 {
	if len(lats) == 0 {
		return 0
	}
	return round(float64(lats[min(len(lats)-1, int(p*float64(len(lats))))].Microseconds()) / 1000)
}

// startLoginServer serves the default workspace behind a trusted proxy, with
// one user, bench, whose password is password.
func startLoginServer(ctx context.Context, store *db.Store, slots int, password string) (*handlers.Handler, *httptest.Server, error) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ws := catalog.DefaultWorkspace()
	loaded, err := handlers.LoadWorkspace(ctx, store, ws, "bench", "bench", time.Now())
	if err != nil {
		return nil, nil, err
	}
	h := handlers.New(store, loaded, log)
	h.Auth = handlers.NewAuth(store, handlers.AuthConfig{LoginLimit: handlers.DefaultLoginLimit, TrustProxy: true, HashSlots: slots})
	hash, err := auth.HashPassword(password)
	if err != nil {
		return nil, nil, err
	}
	if _, err := store.CreateUser(ctx, "bench", "viewer", hash, "bench", time.Now()); err != nil {
		return nil, nil, err
	}
	srv := httptest.NewServer(web.New(h, log))
	return h, srv, nil
}

// benchSignIn signs in as name with pw from the i-th address, after reading
// the form's CSRF token; it returns the answer's status and how long the
// POST took.
func benchSignIn(ctx context.Context, transport *http.Transport, baseURL string, i int, name, pw string) (int, time.Duration, error) {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Transport: transport, Timeout: 5 * time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	addr := fmt.Sprintf("10.%d.%d.%d", (i>>16)&255, (i>>8)&255, i&255)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/login", nil)
	req.Header.Set("X-Forwarded-For", addr)
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, err
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfField.FindSubmatch(page)
	if m == nil {
		return 0, 0, fmt.Errorf("no CSRF field on /login (status %d)", resp.StatusCode)
	}
	form := url.Values{"name": {name}, "password": {pw}, "_csrf": {string(m[1])}}
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/login", nil)
	req.Header.Set("X-Forwarded-For", addr)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	t0 := time.Now()
	req.Body = io.NopCloser(strings.NewReader(form.Encode()))
	resp, err = c.Do(req)
	if err != nil {
		return 0, 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, time.Since(t0), nil
}

// samplePeakRSS records the process's largest resident set size in peak
// until stop is closed.
func samplePeakRSS(stop <-chan struct{}, mu *sync.Mutex, peak *float64) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if r := currentRSSMB(); r > *peak {
				mu.Lock()
				*peak = r
				mu.Unlock()
			}
		}
	}
}

// currentRSSMB reads the process's resident set size now (Linux).
func currentRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return round(kb / 1024)
		}
	}
	return 0
}
