package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
)

// KeysOptions are the settings of `tessera bench keys`.
type KeysOptions struct {
	Keys    int           // keys in the explicit list
	Shuffle bool          // send them in a random (fixed-seed) order, not in key order
	Rounds  int           // rounds of python json.load, preview, create
	Wait    time.Duration // how long after the last request to read the server's RSS again
	// Server is the command that runs `tessera` (its path and any leading
	// arguments); "serve" and its flags are appended.
	Server []string
	// Python is the python3 to time json.load with ("" to skip it), and
	// PythonOnPath python3 as PATH finds it, when that is another program
	// (a version manager's shim, whose own start is then timed too).
	Python, PythonOnPath string
}

// KeysResult is the result line of `tessera bench keys`.
type KeysResult struct {
	Bench   string  `json:"bench"`
	Keys    int     `json:"keys"`
	Shuffle bool    `json:"shuffle"`
	BodyMB  float64 `json:"body_mb"`
	Rounds  int     `json:"rounds"`
	// PythonJSONLoadMs is the median time of `python3 -c 'import json,sys;
	// json.load(open(sys.argv[1]))' body.json` (interpreter start
	// included), null without python3.
	PythonJSONLoadMs *float64  `json:"python_json_load_ms"`
	Python           string    `json:"python,omitempty"` // the interpreter timed
	PythonAllMs      []float64 `json:"python_json_load_all_ms,omitempty"`
	// PythonOnPathMs is the median of the same command run as python3 on
	// PATH, when that is a shim (null otherwise), and the create's and
	// preview's ratios to it.
	PythonOnPathMs     *float64  `json:"python3_on_path_json_load_ms,omitempty"`
	PreviewRatioOnPath *float64  `json:"preview_ratio_to_python3_on_path,omitempty"`
	CreateRatioOnPath  *float64  `json:"create_ratio_to_python3_on_path,omitempty"`
	PreviewMs          float64   `json:"preview_ms"` // medians over the rounds
	CreateMs           float64   `json:"create_ms"`
	PreviewAllMs       []float64 `json:"preview_all_ms"`
	CreateAllMs        []float64 `json:"create_all_ms"`
	// PreviewRatio and CreateRatio are the medians over python's; null
	// without python3.
	PreviewRatio *float64 `json:"preview_ratio_to_python"`
	CreateRatio  *float64 `json:"create_ratio_to_python"`
	// The server's resident set (a process of its own): at rest before the
	// first request, its peak, right after the last request, and WaitS
	// seconds after that.
	RSSBaseMB      float64 `json:"rss_base_mb"`
	RSSPeakMB      float64 `json:"rss_peak_mb"`
	RSSAfterMB     float64 `json:"rss_after_mb"`
	RSSAfterWaitMB float64 `json:"rss_after_wait_mb"`
	WaitS          float64 `json:"wait_s"`
	// GoHeapInuseMB and GoHeapUnreleasedMB are the server's Go heap in use
	// and free but not given back to the system (go_memstats_heap_idle_bytes
	// less go_memstats_heap_released_bytes, from its /metrics), at the end
	// of the wait: what of the resident set is the Go heap's.
	GoHeapInuseMB      float64 `json:"go_heap_inuse_mb"`
	GoHeapUnreleasedMB float64 `json:"go_heap_unreleased_mb"`
	TargetRatio        float64 `json:"target_ratio"`
	TargetRSSMB        float64 `json:"target_rss_mb"`
}

// Keys starts the real server (o.Server serve …, a process of its own) on
// a temporary database with one hourly asset of o.Keys partitions, writes
// a backfill request listing every one of its keys to a file, and times,
// round after round, python's json.load of that file, POST
// /api/v1/backfills/preview and POST /api/v1/backfills with it over HTTP;
// then it reads the server's resident set right away and o.Wait later.
func Keys(ctx context.Context, o KeysOptions) (KeysResult, error) {
	res := KeysResult{Bench: "keys", Keys: o.Keys, Shuffle: o.Shuffle, Rounds: o.Rounds, WaitS: o.Wait.Seconds(), TargetRatio: 3, TargetRSSMB: 150}
	dir, err := os.MkdirTemp("", "tessera-bench-keys-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	ws, keys, err := keysWorkspace(dir, o.Keys)
	if err != nil {
		return res, err
	}
	if o.Shuffle {
		r := rand.New(rand.NewPCG(1, 2))
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	}
	body := filepath.Join(dir, "body.json")
	if res.BodyMB, err = writeKeysBody(body, keys); err != nil {
		return res, err
	}
	keys = nil
	dbPath := filepath.Join(dir, "bench.db")
	token, err := benchToken(ctx, dbPath)
	if err != nil {
		return res, err
	}
	srv, err := startServe(ctx, o.Server, dir, dbPath, ws)
	if err != nil {
		return res, err
	}
	defer srv.stop()
	res.RSSBaseMB = procRSSMB(srv.pid(), "VmRSS:")
	var pys, paths []float64
	for round := range o.Rounds {
		if o.Python != "" {
			ms, err := timePython(ctx, o.Python, body)
			if err != nil {
				return res, err
			}
			pys = append(pys, ms)
		}
		if o.PythonOnPath != "" {
			ms, err := timePython(ctx, o.PythonOnPath, body)
			if err != nil {
				return res, err
			}
			paths = append(paths, ms)
		}
		ms, err := postBody(ctx, srv.url+"/api/v1/backfills/preview", token, body, "", http.StatusOK)
		if err != nil {
			return res, fmt.Errorf("preview: %w", err)
		}
		res.PreviewAllMs = append(res.PreviewAllMs, ms)
		ms, err = postBody(ctx, srv.url+"/api/v1/backfills", token, body, fmt.Sprintf("bench-keys-%d", round), http.StatusCreated)
		if err != nil {
			return res, fmt.Errorf("create: %w", err)
		}
		res.CreateAllMs = append(res.CreateAllMs, ms)
	}
	res.RSSAfterMB = procRSSMB(srv.pid(), "VmRSS:")
	select {
	case <-time.After(o.Wait):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	res.RSSAfterWaitMB = procRSSMB(srv.pid(), "VmRSS:")
	m, err := scrapeMetrics(ctx, srv.url, token, "go_memstats_heap_inuse_bytes", "go_memstats_heap_idle_bytes", "go_memstats_heap_released_bytes")
	if err != nil {
		return res, err
	}
	res.GoHeapInuseMB = round(m[0] / 1e6)
	res.GoHeapUnreleasedMB = round((m[1] - m[2]) / 1e6)
	res.RSSPeakMB = procRSSMB(srv.pid(), "VmHWM:")
	res.PreviewMs, res.CreateMs = median(res.PreviewAllMs), median(res.CreateAllMs)
	if len(pys) > 0 {
		py := median(pys)
		res.PythonJSONLoadMs, res.PythonAllMs, res.Python = &py, pys, o.Python
		pr, cr := round(res.PreviewMs/py), round(res.CreateMs/py)
		res.PreviewRatio, res.CreateRatio = &pr, &cr
	}
	if len(paths) > 0 {
		py := median(paths)
		pr, cr := round(res.PreviewMs/py), round(res.CreateMs/py)
		res.PythonOnPathMs, res.PreviewRatioOnPath, res.CreateRatioOnPath = &py, &pr, &cr
	}
	return res, nil
}

// keysWorkspace writes a workspace of one hourly asset, bench.keys, of n
// partitions up to now (in a pool that runs one chunk a day, so that the
// backfills created stay all but idle) and returns its path and the keys.
func keysWorkspace(dir string, n int) (string, []string, error) {
	now := time.Now().UTC()
	start := now.Truncate(time.Hour).Add(-time.Duration(n) * time.Hour)
	yaml := fmt.Sprintf(`pools:
  held: {max_concurrent_runs: 1, throttle: 1/d}
assets:
  bench.keys:
    partitions: {hourly: {start: %q}}
    code_version: v1
    pool: held
    retries: {max_attempts: 1}
    executor: {demo: {duration: 1ms}}
`, start.Format("2006-01-02-15:04"))
	ws, err := catalog.ParseWorkspace("bench.yaml", []byte(yaml))
	if err != nil {
		return "", nil, err
	}
	sp := ws.Asset("bench.keys").Scheme.Space(now, db.DynamicKeys{})
	if sp.Len() < int64(n) {
		return "", nil, fmt.Errorf("the benchmark asset has %d partitions, not %d", sp.Len(), n)
	}
	keys := sp.Keys(0, int64(n))
	path := filepath.Join(dir, "ws.yaml")
	return path, keys, os.WriteFile(path, []byte(yaml), 0o644)
}

// writeKeysBody writes the backfill request of keys to path and returns
// its size in MB.
func writeKeysBody(path string, keys []string) (float64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprint(w, `{"assets": ["bench.keys"], "chunk_size": 100, "title": "bench keys", "selector": {"type": "explicit", "keys": [`)
	for i, k := range keys {
		if i > 0 {
			w.WriteString(", ")
		}
		w.WriteString(strconv.Quote(k))
	}
	w.WriteString("]}}\n")
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return 0, err
	}
	return round(float64(st.Size()) / 1e6), f.Close()
}

// benchToken creates the database at dbPath with an operator and returns
// an API token of theirs.
func benchToken(ctx context.Context, dbPath string) (string, error) {
	store, err := db.Open(dbPath)
	if err != nil {
		return "", err
	}
	defer store.Close()
	return operatorToken(ctx, store)
}

// operatorToken creates an operator, bench, in store and returns an API
// token of theirs.
func operatorToken(ctx context.Context, store *db.Store) (string, error) {
	hash, err := auth.HashPassword("bench-password-1")
	if err != nil {
		return "", err
	}
	u, err := store.CreateUser(ctx, "bench", "operator", hash, "bench", time.Now())
	if err != nil {
		return "", err
	}
	secret, prefix, th, err := auth.NewToken()
	if err != nil {
		return "", err
	}
	if _, err := store.CreateToken(ctx, u.ID, "bench", prefix, th, "", nil, "bench", time.Now()); err != nil {
		return "", err
	}
	return secret, nil
}

// served is a server process started by startServe.
type served struct {
	cmd    *exec.Cmd
	url    string
	logOut string
}

func (s *served) pid() int { return s.cmd.Process.Pid }

// stop interrupts the server and waits for it.
func (s *served) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// startServe runs argv serve on dbPath and the workspace ws, its log in
// dir, and waits until it answers /readyz.
func startServe(ctx context.Context, argv []string, dir, dbPath, ws string) (*served, error) {
	if len(argv) == 0 {
		return nil, errors.New("no server command")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	logPath := filepath.Join(dir, "serve.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	args := append(slices.Clip(argv[1:]), "serve", "--addr", addr, "--db", dbPath, "--workspace", ws, "--seed-demo", "never")
	cmd := exec.Command(argv[0], args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &served{cmd: cmd, url: "http://" + addr, logOut: logPath}
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.stop()
			logb, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("the server did not get ready at %s: %v\n%s", s.url, err, logb)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// postBody POSTs the file body to url with token (and Idempotency-Key idem
// when set) and returns how long the answer took, in ms, to arrive whole;
// an answer other than want is an error.
func postBody(ctx context.Context, url, token, body, idem string, want int) (float64, error) {
	f, err := os.Open(body)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, f)
	if err != nil {
		return 0, err
	}
	req.ContentLength = st.Size()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	ms := float64(time.Since(t0).Microseconds()) / 1000
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != want {
		return 0, fmt.Errorf("%s answered %d, not %d: %.500s", url, resp.StatusCode, want, out)
	}
	return round(ms), nil
}

// scrapeMetrics reads the values of the named metrics (without labels)
// from the server's /metrics.
func scrapeMetrics(ctx context.Context, base, token string, names ...string) ([]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics answered %d: %.300s", resp.StatusCode, text)
	}
	out := make([]float64, len(names))
	for _, line := range strings.Split(string(text), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		if i := slices.Index(names, f[0]); i >= 0 {
			out[i], _ = strconv.ParseFloat(f[1], 64)
		}
	}
	return out, nil
}

// timePython times python's json.load of the file body, interpreter start
// included, in ms.
func timePython(ctx context.Context, python, body string) (float64, error) {
	t0 := time.Now()
	out, err := exec.CommandContext(ctx, python, "-c", "import json,sys; json.load(open(sys.argv[1]))", body).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%s json.load: %v: %s", python, err, out)
	}
	return round(float64(time.Since(t0).Microseconds()) / 1000), nil
}

// procRSSMB reads a size field (VmRSS:, VmHWM:) of process pid, in MB.
func procRSSMB(pid int, field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return round(kb / 1024)
		}
	}
	return 0
}

// median is the median of xs (0 when there are none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return round((s[len(s)/2-1] + s[len(s)/2]) / 2)
}
