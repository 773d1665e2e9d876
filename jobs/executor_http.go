package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// HTTPExecutor POSTs the work as JSON to the asset's URL. A 2xx answer with
// {"results": [...]} (or no body) completes the attempt; 202 means the remote
// engine calls POST /api/v1/runs/{id}/complete later. 429/503 with
// Retry-After (or X-RateLimit-Reset) slows the whole pool down; 401 refreshes
// the bearer token once from token_url.
type HTTPExecutor struct {
	Pools  *poolState
	Client *http.Client
}

var tokens sync.Map // token_url → bearer token

// Execute implements Executor.
func (h *HTTPExecutor) Execute(ctx context.Context, w Work) Result {
	if w.Def == nil || w.Def.Executor.HTTP == nil {
		return Result{Err: errors.New("the asset has no http executor")}
	}
	cfg := w.Def.Executor.HTTP
	client := sameHostRedirects(h.Client)
	parent := ctx
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}
	// timedOut turns an error caused by the executor's own timeout (not the
	// attempt's, not a cancel: execute records those) into a timeout.
	timedOut := func(res Result) Result {
		if cfg.Timeout > 0 && parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			res.State = db.AttemptTimeout
			res.Err = fmt.Errorf("POST %s: no answer within %s (the http executor's timeout)", cfg.URL, cfg.Timeout)
		}
		return res
	}
	body, _ := json.Marshal(w)
	refreshed := false
	for {
		req, err := newWorkRequest(ctx, cfg, w, body)
		if err != nil {
			return Result{Err: err}
		}
		if err := setBearerToken(ctx, client, cfg, req); err != nil {
			return timedOut(Result{Err: err})
		}
		resp, err := client.Do(req)
		var away *crossHostRedirect
		if errors.As(err, &away) {
			return Result{Err: fmt.Errorf("POST %s: redirected to %s, on another host; Tessera does not follow redirects to another host, which would receive the executor's token and headers: set the asset's executor url to the address that answers", cfg.URL, away.to)}
		}
		if err != nil {
			return timedOut(Result{Err: fmt.Errorf("POST %s: %w", cfg.URL, err)})
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		resp.Body.Close()
		logLine := fmt.Sprintf("POST %s -> %s\n%s", cfg.URL, resp.Status, truncate(string(b), 4000))
		if err != nil {
			return timedOut(Result{Err: fmt.Errorf("POST %s: reading the answer: %w", cfg.URL, err), Log: logLine})
		}
		// Rate-limit headers slow the whole pool whatever the answer was;
		// Retry-After only on the answers that mean "not now".
		limited, wait := rateLimitWait(resp)
		if wait > 0 && h.Pools != nil {
			h.Pools.SlowDown(w.Def.Pool, time.Now().Add(wait))
		}
		switch {
		case resp.StatusCode == http.StatusUnauthorized && cfg.TokenURL != "" && !refreshed:
			refreshed = true
			t, err := fetchToken(ctx, client, cfg.TokenURL)
			if err != nil {
				return timedOut(Result{Err: err, Log: logLine})
			}
			tokens.Store(cfg.TokenURL, t)
			continue
		case resp.StatusCode == http.StatusAccepted:
			return Result{Async: true, AsyncTimeout: cfg.Timeout, Log: logLine}
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			return workAnswer(b, w, logLine)
		default:
			res := Result{Err: fmt.Errorf("POST %s: %s", cfg.URL, resp.Status), Log: logLine}
			if limited {
				res.RetryAfter = wait
			}
			return res
		}
	}
}

// newWorkRequest is the POST of the work to the executor's URL, with its
// headers.
func newWorkRequest(ctx context.Context, cfg *catalog.HTTPExecutor, w Work, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", w.IdempotencyKey)
	for k, v := range cfg.Headers {
		req.Header.Set(k, v)
	}
	return req, nil
}

// setBearerToken authorizes req with the token from the executor's
// token_url, fetched once and then remembered.
func setBearerToken(ctx context.Context, client *http.Client, cfg *catalog.HTTPExecutor, req *http.Request) error {
	if cfg.TokenURL != "" {
		tok, ok := tokens.Load(cfg.TokenURL)
		if !ok {
			t, err := fetchToken(ctx, client, cfg.TokenURL)
			if err != nil {
				return err
			}
			tokens.Store(cfg.TokenURL, t)
			tok = t
		}
		req.Header.Set("Authorization", "Bearer "+tok.(string))
	}
	return nil
}

// rateLimitWait is whether the answer means "not now" (429 or 503) and how
// long the pool should slow down for: X-RateLimit-Reset on any answer,
// Retry-After on those (a 429 without either waits defaultRateLimitWait).
func rateLimitWait(resp *http.Response) (bool, time.Duration) {
	limited := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable
	wait := rateLimitReset(resp.Header)
	if limited {
		wait = max(wait, retryAfter(resp.Header))
		if wait <= 0 && resp.StatusCode == http.StatusTooManyRequests {
			wait = defaultRateLimitWait
		}
	}
	return limited, wait
}

// workAnswer is the result of a 2xx answer b: its {"results": [...]}
// checked against the work's partitions, and its "error".
func workAnswer(b []byte, w Work, logLine string) Result {
	res := Result{Log: logLine}
	var out struct {
		Results []PartResult `json:"results"`
		Error   string       `json:"error"`
	}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &out); err != nil {
			return Result{Err: fmt.Errorf("answer is not JSON: %v", err), Log: logLine}
		}
	}
	if out.Error != "" {
		res.Err = errors.New(out.Error)
	}
	known := make(map[string]bool, len(w.Partitions))
	for _, p := range w.Partitions {
		known[p] = true
	}
	c := newCheckedResults()
	for i, p := range out.Results {
		c.add(fmt.Sprintf("results[%d]", i), p, known)
	}
	c.apply(&res, w.Partitions)
	return res
}

// crossHostRedirect is why a redirect was not followed: it leaves the
// origin (scheme, host and port) of the first request.
type crossHostRedirect struct{ to string }

func (e *crossHostRedirect) Error() string {
	return "redirect to another host (" + e.to + ") not followed"
}

// sameHostRedirects is a copy of c (http.DefaultClient when nil) that
// follows redirects only within the first request's origin: scheme, host
// and port. The executor's requests carry its bearer token, its custom
// headers and the work itself, and net/http would forward the custom
// headers (and, on the same host name with another port, the token) to
// wherever a redirect points. A redirect elsewhere fails the request.
func sameHostRedirects(c *http.Client) *http.Client {
	if c == nil {
		c = http.DefaultClient
	}
	cp := *c
	prev := c.CheckRedirect
	cp.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if origin(req.URL) != origin(via[0].URL) {
			return &crossHostRedirect{to: req.URL.String()}
		}
		if prev != nil {
			return prev(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &cp
}

// origin is scheme://host:port of u, the port spelled out when u leaves
// the scheme's default implied.
func origin(u *url.URL) string {
	scheme, port := strings.ToLower(u.Scheme), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// defaultRateLimitWait is how long a pool pauses after a 429 that does not
// say how long to wait.
const defaultRateLimitWait = 5 * time.Second

// retryAfter reads Retry-After (seconds or an HTTP date).
func retryAfter(h http.Header) time.Duration {
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.Atoi(v); err == nil {
			return time.Duration(s) * time.Second
		}
		if t, err := http.ParseTime(v); err == nil {
			return time.Until(t)
		}
	}
	return 0
}

// rateLimitReset reads X-RateLimit-Remaining: 0 with X-RateLimit-Reset
// (seconds from now, or a Unix time): the remote's quota is spent until then.
func rateLimitReset(h http.Header) time.Duration {
	if h.Get("X-RateLimit-Remaining") == "0" {
		if s, err := strconv.Atoi(h.Get("X-RateLimit-Reset")); err == nil {
			if s > 1_000_000_000 {
				return time.Until(time.Unix(int64(s), 0))
			}
			return time.Duration(s) * time.Second
		}
	}
	return 0
}

func fetchToken(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("token refresh: %w", err)
	}
	defer resp.Body.Close()
	var t struct {
		AccessToken string `json:"access_token"`
		Token       string `json:"token"`
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("token refresh: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&t); err != nil {
		return "", fmt.Errorf("token refresh: %w", err)
	}
	if t.AccessToken == "" {
		t.AccessToken = t.Token
	}
	return t.AccessToken, nil
}
