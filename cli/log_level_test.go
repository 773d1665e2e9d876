package cli_test

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/testkit"
)

// TestLogLevelDebugLogsAttempts: TESSERA_LOG_LEVEL=debug (README: "debug for
// more") adds a line when an attempt starts and when its executor returns;
// the default level does not.
func TestLogLevelDebugLogsAttempts(t *testing.T) {
	t.Parallel()
	ws := writeFile(t, "ws.yaml", `assets:
  dbg.static:
    partitions: {static: [a, b]}
    executor: {demo: {duration: 10ms}}
`)
	for _, level := range []string{"debug", ""} {
		dbPath := filepath.Join(t.TempDir(), "t.db")
		url, logPath := serveBinary(t, []string{"TESSERA_LOG_LEVEL=" + level}, "--db", dbPath, "--workspace", ws)
		out, err := exec.Command(tesseraBin, "token", "create", "--user", "admin", "--name", "t", "--db", dbPath).Output()
		if err != nil {
			t.Fatalf("token create: %v", err)
		}
		req, _ := http.NewRequest("POST", url+"/api/v1/backfills", strings.NewReader(`{"assets": ["dbg.static"], "selector": {"type": "explicit", "keys": ["a", "b"]}, "chunk_size": 1, "max_concurrent_runs": 2}`))
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(out)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("create backfill: %v %v", resp, err)
		}
		var bf struct {
			ID    string `json:"id"`
			State string `json:"state"`
		}
		json.NewDecoder(resp.Body).Decode(&bf)
		resp.Body.Close()
		testkit.Eventually(t, 30*time.Second, "backfill "+bf.ID+" to succeed", func() bool {
			req, _ := http.NewRequest("GET", url+"/api/v1/backfills/"+bf.ID, nil)
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(out)))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				json.NewDecoder(resp.Body).Decode(&bf)
				resp.Body.Close()
			}
			return bf.State == "SUCCEEDED"
		})
		b, _ := os.ReadFile(logPath)
		log := string(b)
		started := strings.Contains(log, `msg="attempt started"`) && strings.Contains(log, "asset=dbg.static") && strings.Contains(log, "first=a")
		returned := strings.Contains(log, `msg="executor returned"`)
		if level == "debug" && (!started || !returned) {
			t.Fatalf("TESSERA_LOG_LEVEL=debug logs no attempt:\n%s", log)
		}
		if level == "" && (started || returned) {
			t.Fatalf("the default level logs debug lines:\n%s", log)
		}
	}
}
