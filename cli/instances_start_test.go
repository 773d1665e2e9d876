package cli_test

import (
	"net"
	"net/http"
	"os"
	"regexp"
	"testing"

	"github.com/tessera-dev/tessera/testkit/pgtest"
)

// TestThreeInstancesStartTogetherOnANewDatabase: deploy/compose.yaml's
// start, with the real binary: three `serve` processes started at once on
// one new PostgreSQL database (the same workspace and session keys) all
// become ready; the schema is migrated once and exactly one of them
// creates the first admin and prints its password.
func TestThreeInstancesStartTogetherOnANewDatabase(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	ws := writeFile(t, "ws.yaml", clientWorkspace)
	env := []string{"TESSERA_SESSION_KEYS=0123456789abcdef-three", "TESSERA_SEED_DEMO=never"}
	var addrs, logs []string
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ln.Addr().String())
		ln.Close()
	}
	for _, a := range addrs {
		_, logPath := startServe(t, env, "--addr", a, "--db", url, "--workspace", ws)
		logs = append(logs, logPath)
	}
	for i, a := range addrs {
		waitReady(t, http.DefaultClient, "http://"+a, logs[i])
	}
	admins := 0
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		admins += len(regexp.MustCompile(`created first admin account`).FindAll(b, -1))
	}
	if admins != 1 {
		t.Fatalf("%d instances created the first admin, want 1", admins)
	}
}
