package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/testkit/teststore"
)

func buildBinary(t *testing.T) string {
	t.Helper()
	if bin, err := testkit.PrebuiltBinary(); err != nil {
		t.Fatal(err)
	} else if bin != "" {
		return bin // make test built it once for web, cli and e2e
	}
	bin := filepath.Join(t.TempDir(), "tessera")
	cmd := exec.Command("go", "build", "-o", bin, "..")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("build: %v", err)
	}
	return bin
}

type server struct {
	t    *testing.T
	bin  string
	args []string
	env  []string
	cmd  *exec.Cmd
	log  *bytes.Buffer
	addr string
}

func (s *server) start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin, s.args...)
	s.cmd.Env = append(os.Environ(), s.env...)
	s.log = &bytes.Buffer{}
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	up := false
	defer func() {
		if !up {
			s.t.Logf("the server's log:\n%s", s.tail())
		}
	}()
	testkit.Eventually(s.t, 30*time.Second, "the server to answer /healthz", func() bool {
		resp, err := http.Get("http://" + s.addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	up = true
}

func (s *server) tail() string {
	b := s.log.Bytes()
	return string(b[max(0, len(b)-4000):])
}

func (s *server) kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	_ = s.cmd.Wait()
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		s.kill()
	}
}

func api(t *testing.T, method, url, token string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestCrashSafety kills the real server with SIGKILL at random moments of a
// 5,000-partition backfill run by a command executor, restarts it, and checks
// the end state from the database.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	built := filepath.Join(dir, "built.log")
	ws := filepath.Join(dir, "ws.yaml")
	os.WriteFile(ws, []byte(fmt.Sprintf(`
assets:
  crash.hourly:
    partitions: {hourly: {start: "2025-01-01-00:00", end: "2025-07-28-08:00"}}
    retries: {max_attempts: 3, backoff: 10ms}
    timeout: 30s
    executor:
      command: [sh, -c, 'i=0; for p in $TESSERA_PARTITIONS; do echo "$p $TESSERA_RUN_ID $TESSERA_ATTEMPT" >> %s; printf "{\"partition\":\"%%s\",\"status\":\"materialized\"}\n" "$p" >> "$TESSERA_REPORT"; i=$((i+1)); if [ $i = 12 ]; then sleep 0.1; fi; done; sleep 0.1']
`, built)), 0o644)
	dbPath := filepath.Join(dir, "tessera.db")
	addr := testkit.FreeAddr(t)
	srv := &server{t: t, bin: bin, addr: addr,
		args: []string{"serve", "--addr", addr, "--db", dbPath, "--workspace", ws},
		env:  []string{"TESSERA_LEASE_TTL=1s", "TESSERA_MAX_CONCURRENT_RUNS=8", "TESSERA_LOG_LEVEL=info"}}
	srv.start()
	t.Cleanup(srv.kill) // when the test fails before it stops the server
	tok, err := exec.Command(bin, "token", "create", "--db", dbPath, "--user", "admin", "--name", "crash").Output()
	if err != nil {
		t.Fatalf("token create: %v\n%s", err, srv.tail())
	}
	token := strings.TrimSpace(string(tok))
	base := "http://" + addr + "/api/v1"
	code, bf := api(t, http.MethodPost, base+"/backfills", token, map[string]any{
		"assets": []string{"crash.hourly"}, "selector": map[string]any{"type": "range"}, "chunk_size": 25, "max_concurrent_runs": 8})
	if code != http.StatusCreated || bf["total_partitions"].(float64) != 5000 {
		t.Fatalf("create: %d %v\n%s", code, bf, srv.tail())
	}
	id := bf["id"].(string)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	kills := 0
	for kills < 4 {
		// A sleep: killing at a random point of the run is the scenario, not a wait for a state.
		time.Sleep(time.Duration(200+rng.IntN(1200)) * time.Millisecond)
		_, cur := api(t, http.MethodGet, base+"/backfills/"+id, token, nil)
		if cur["state"] == db.BackfillSucceeded {
			break
		}
		srv.kill()
		kills++
		srv.start()
	}
	var cur map[string]any
	testkit.Eventually(t, 3*time.Minute, "the backfill to end", func() bool {
		_, cur = api(t, http.MethodGet, base+"/backfills/"+id, token, nil)
		s, _ := cur["state"].(string)
		return db.BackfillTerminal(s)
	})
	srv.stop()
	t.Logf("killed %d times; final %v", kills, cur["state"])
	if cur["state"] != db.BackfillSucceeded {
		t.Fatalf("backfill ended %v: %v\n%s", cur["state"], cur, srv.tail())
	}

	store := teststore.OpenAt(t, dbPath)
	one := func(q string, args ...any) int64 {
		var n int64
		if err := store.RawReader().Get(&n, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	if n := one(`SELECT COUNT(*) FROM partition_status_all WHERE status='materialized'`); n != 5000 {
		t.Errorf("%d partitions materialized, want 5000", n)
	}
	if n := one(`SELECT COUNT(*) FROM partition_status_all WHERE status != 'materialized'`); n != 0 {
		t.Errorf("%d partitions not materialized", n)
	}
	// No chunk planned twice: 200 runs, and the planning events name each chunk once.
	if n := one(`SELECT COUNT(DISTINCT run_key) FROM runs WHERE backfill_id=?`, id); n != 200 {
		t.Errorf("%d distinct run keys, want 200", n)
	}
	var payloads []string
	if err := store.RawReader().Select(&payloads, `SELECT payload FROM events WHERE type=?`, db.EvRunsPlanned); err != nil {
		t.Fatal(err)
	}
	planned := map[string]int{}
	for _, p := range payloads {
		var ev db.RunsPlanned
		if err := json.Unmarshal([]byte(p), &ev); err != nil {
			t.Fatal(err)
		}
		for _, r := range ev.Runs {
			planned[r.RunKey]++
		}
	}
	for k, n := range planned {
		if n > 1 {
			t.Errorf("run key %s planned %d times", k, n)
		}
	}
	if len(planned) != 200 {
		t.Errorf("%d run keys planned, want 200", len(planned))
	}
	// No partition built by two attempts at overlapping times.
	if n := one(`SELECT COUNT(*) FROM partition_instances_all x JOIN partition_instances_all y
		ON x.asset_id = y.asset_id AND x.partition_key = y.partition_key AND x.id < y.id
		WHERE x.started_at < COALESCE(y.finished_at, 1e15) AND y.started_at < COALESCE(x.finished_at, 1e15)`); n != 0 {
		t.Errorf("%d pairs of instances of the same partition overlap in time", n)
	}
	// Checkpoint: a partition reported materialized is never built again.
	if n := one(`SELECT COUNT(*) FROM (SELECT partition_key FROM partition_instances_all WHERE status='materialized' GROUP BY partition_key HAVING COUNT(*) > 1)`); n != 0 {
		t.Errorf("%d partitions materialized by more than one instance", n)
	}
	// The kills did hit running attempts, and those were recovered.
	if kills == 0 {
		t.Fatal("the backfill finished before the first kill: nothing was tested")
	}
	interrupted := one(`SELECT COUNT(*) FROM attempts WHERE state='interrupted'`)
	t.Logf("interrupted attempts: %d", interrupted)
	if interrupted == 0 {
		t.Errorf("%d kills interrupted no attempt", kills)
	}
	if n := one(`SELECT COUNT(*) FROM attempts WHERE state='running'`); n != 0 {
		t.Errorf("%d attempts still running after the end", n)
	}
	// The command's own record: every partition built, and no attempt
	// built a partition twice.
	log, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	seen, parts := map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		if seen[line] {
			t.Errorf("built twice by the same attempt: %s", line)
		}
		seen[line] = true
		parts[strings.Fields(line)[0]] = true
	}
	if len(parts) != 5000 {
		t.Errorf("the command built %d distinct partitions, want 5000", len(parts))
	}
	// Events replay to the same projections.
	teststore.ReplayEquals(t, store)
}
