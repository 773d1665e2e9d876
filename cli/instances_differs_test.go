package cli_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
)

// TestDifferingInstanceWritesNothing (issue 23 audit): a second real
// instance started on the same PostgreSQL database with another workspace
// (the embedded demo) does not rewrite the shared catalog (the first
// instance's assets stay, none of its own is added, none marked removed),
// refuses to create a backfill with a 409 naming what differs and writing
// nothing, and the first instance stays ready.
func TestDifferingInstanceWritesNothing(t *testing.T) {
	t.Parallel()
	s := startServerOn(t, db.Postgres, clientWorkspace)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, logPath := startServe(t, []string{"TESSERA_SESSION_KEYS=0123456789abcdef-cli-test"}, "--addr", addr, "--db", s.DB)
	second := "http://" + addr
	testkit.Eventually(t, 30*time.Second, "the second instance's /readyz to say its workspace differs", func() bool {
		resp, err := http.Get(second + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var rd struct {
			Workspace *struct{ Differs bool } `json:"workspace"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&rd)
		return resp.StatusCode == http.StatusServiceUnavailable && rd.Workspace != nil && rd.Workspace.Differs
	})
	log, _ := os.ReadFile(logPath)
	if !strings.Contains(string(log), "not syncing it into the shared catalog") || !strings.Contains(string(log), "t.daily") {
		t.Fatalf("the second instance's log does not say it did not sync, and what differs:\n%s", log)
	}
	store, err := db.Open(s.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var rows []struct {
		Key     string `db:"key"`
		Removed bool   `db:"removed"`
	}
	if err := store.RawReader().Select(&rows, `SELECT key, removed FROM assets ORDER BY key`); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range rows {
		if r.Removed {
			t.Errorf("asset %s marked removed by the instance whose workspace differs", r.Key)
		}
		keys = append(keys, r.Key)
	}
	if strings.Join(keys, ",") != "t.daily,t.flaky,t.one" {
		t.Fatalf("catalog assets %v, want the first instance's only", keys)
	}

	body := `{"assets":["crm.accounts_snapshot"],"selector":{"type":"range","start":"2025-01-01","end":"2025-01-02"},"chunk_size":1,"max_concurrent_runs":1}`
	req, _ := http.NewRequestWithContext(context.Background(), "POST", second+"/api/v1/backfills", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var eb struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&eb)
	e := eb.Error
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || e.Code != "workspace_differs" || !strings.Contains(e.Message, "differs from the cluster's") || !strings.Contains(e.Message, "t.daily") {
		t.Fatalf("create on the differing instance: %d %+v, want 409 workspace_differs naming t.daily", resp.StatusCode, e)
	}
	var n int
	if err := store.RawReader().Get(&n, `SELECT COUNT(*) FROM backfills`); err != nil || n != 0 {
		t.Fatalf("backfills written: %d %v", n, err)
	}
	// It still serves reads from the database as it is.
	for _, path := range []string{"/api/v1/assets", "/api/v1/backfills", "/api/v1/schedules"} {
		req, _ := http.NewRequest("GET", second+path, nil)
		req.Header.Set("Authorization", "Bearer "+s.Token)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusOK {
			t.Errorf("GET %s on the differing instance: %d, want 200", path, r.StatusCode)
		}
	}
	if r, err := http.Get(s.URL + "/readyz"); err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("first instance not ready: %v %v", r, err)
	} else {
		r.Body.Close()
	}
}
