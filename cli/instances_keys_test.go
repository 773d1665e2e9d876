package cli_test

import (
	"net/http"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/testkit/pgtest"
)

// Session keys of the key tests: 16 characters or more each.
const (
	oldKey   = "old-session-key-0123456789"
	newKey   = "new-session-key-0123456789"
	otherKey = "other-session-key-0123456789"
)

// keysEnv is the environment of an instance with session keys keys.
func keysEnv(keys ...string) []string {
	return []string{"TESSERA_SESSION_KEYS=" + strings.Join(keys, ","), "TESSERA_SEED_DEMO=never", "TESSERA_LEASE_TTL=1s"}
}

var instanceIDInLog = regexp.MustCompile(`tessera listening" .*instance=(w_[0-9a-z]+)`)

// instanceID reads the worker id an instance logged as it began to listen.
func instanceID(t *testing.T, logPath string) string {
	t.Helper()
	b, _ := os.ReadFile(logPath)
	m := instanceIDInLog.FindSubmatch(b)
	if m == nil {
		t.Fatalf("no instance id in the log:\n%s", b)
	}
	return string(m[1])
}

// keyRows are the owners of the recorded session keys, and the workers
// and workspaces recorded: what an instance that starts writes of itself.
func keyRows(t *testing.T, store *db.Store) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, table := range []string{"instance_session_keys", "workers", "worker_workspaces"} {
		var owners []string
		if err := store.RawReader().Select(&owners, `SELECT owner FROM `+table+` ORDER BY owner`); err != nil {
			t.Fatal(err)
		}
		out[table] = owners
	}
	return out
}

// refusedForKeys starts serve with keys beside the live instances and
// asserts that it exits 2 with the message naming one of them (want) and
// saying what to do, without showing a key.
func refusedForKeys(t *testing.T, url, ws string, want []string, keys ...string) string {
	t.Helper()
	// Port 0: the refused server must not need a free port (a port
	// FreeAddr found free may be taken again before serve binds it).
	code, out := runBinary(t, keysEnv(keys...), "serve", "--addr", "127.0.0.1:0", "--db", url, "--workspace", ws)
	if code != 2 {
		t.Fatalf("serve with keys %v: exit %d, want 2:\n%s", keys, code, out)
	}
	for _, s := range []string{"TESSERA_SESSION_KEYS differ from those of instance ",
		"give every instance the same TESSERA_SESSION_KEYS; to rotate, first add the new key after the current one on every instance, then move it first"} {
		if !strings.Contains(strings.ToLower(out), strings.ToLower(s)) {
			t.Fatalf("serve with keys %v: output lacks %q:\n%s", keys, s, out)
		}
	}
	named := false
	for _, id := range want {
		named = named || strings.Contains(out, "instance "+id+",")
	}
	if !named {
		t.Fatalf("serve with keys %v names none of the live instances %v:\n%s", keys, want, out)
	}
	for _, k := range []string{oldKey, newKey, otherKey} {
		if strings.Contains(out, k) {
			t.Fatalf("serve's output shows a session key:\n%s", out)
		}
	}
	if strings.Contains(out, "tessera listening") {
		t.Fatalf("the refused instance listened:\n%s", out)
	}
	return out
}

// TestSessionKeysAcrossInstances (issue 23 D6): real `tessera serve`
// processes on one PostgreSQL database. Two with the same keys are both
// ready; one that adds a new key second ([old,new] beside [old], the first
// phase of a rotation) is ready too, and a session signed in on either
// side is read by the other. One with other keys, and one that moves the
// new key first while instances still lack it, exit 2 naming a live
// instance and saying how to rotate, and leave nothing behind: the next
// start with the right keys is ready.
func TestSessionKeysAcrossInstances(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	ws := writeFile(t, "ws.yaml", clientWorkspace)
	pw := writeFile(t, "pw", "correct-horse-battery\n")
	if code, out := runBinary(t, keysEnv(oldKey), "migrate", "--db", url); code != 0 {
		t.Fatalf("migrate: %s", out)
	}
	if code, out := runBinary(t, keysEnv(oldKey), "user", "add", "ops", "--role", "operator", "--password-file", pw, "--db", url); code != 0 {
		t.Fatalf("user add: %s", out)
	}
	a, aLog := serveBinary(t, keysEnv(oldKey), "--db", url, "--workspace", ws)
	b, bLog := serveBinary(t, keysEnv(oldKey), "--db", url, "--workspace", ws)
	rot, rotLog := serveBinary(t, keysEnv(oldKey, newKey), "--db", url, "--workspace", ws)
	idA, idB, idRot := instanceID(t, aLog), instanceID(t, bLog), instanceID(t, rotLog)
	for _, u := range []string{a, b} {
		if r, err := http.Get(u + "/readyz"); err != nil || r.StatusCode != http.StatusOK {
			t.Fatalf("%s not ready beside the rotating instance: %v %v", u, r, err)
		} else {
			r.Body.Close()
		}
	}
	// Sessions cross between [old] and [old,new] both ways.
	for _, pair := range [][2]string{{rot, a}, {a, rot}} {
		c := (&testkit.Env{URL: pair[0]}).Login(t, "ops", "correct-horse-battery")
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := c.Get(pair[1] + "/api/v1/backfills")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("a session signed in on %s: %d on %s, want 200", pair[0], resp.StatusCode, pair[1])
		}
	}

	store, err := db.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	before := keyRows(t, store)
	ids := []string{idA, idB, idRot}
	slices.Sort(ids)
	if got := before["instance_session_keys"]; !slices.Equal(got, ids) || !slices.Equal(before["workers"], ids) {
		t.Fatalf("session keys recorded for %v, workers %v; want the 3 instances %v under their worker ids", got, before["workers"], ids)
	}
	var recorded string
	if err := store.RawReader().Get(&recorded, `SELECT signing || ',' || keys FROM instance_session_keys WHERE owner = ?`, idRot); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(recorded, oldKey) || strings.Contains(recorded, newKey) || len(strings.Split(recorded, ",")) != 3 {
		t.Fatalf("recorded %q: want the checks of the signing key and of both keys, never a key", recorded)
	}

	// Keys the others cannot read: refused, nothing recorded.
	out := refusedForKeys(t, url, ws, []string{idA, idB, idRot}, otherKey)
	if !strings.Contains(out, "neither has the key the other signs sessions with") {
		t.Fatalf("the refusal does not say which way the keys fail:\n%s", out)
	}
	// The new key moved first while [old] instances lack it: refused,
	// naming one of them.
	out = refusedForKeys(t, url, ws, []string{idA, idB}, newKey, oldKey)
	if !strings.Contains(out, "does not have the key this instance would sign sessions with") {
		t.Fatalf("the refusal does not say that the live instance lacks the new signing key:\n%s", out)
	}
	if after := keyRows(t, store); !reflect.DeepEqual(after, before) {
		t.Fatalf("the refused instances wrote:\nbefore %v\nafter  %v", before, after)
	}
	// Nothing of them blocks a start with the right keys.
	serveBinary(t, keysEnv(oldKey), "--db", url, "--workspace", ws)
}

// TestSessionKeysOfStoppedInstancesDoNotCount: the keys of an instance
// stop counting when it stops: at once when it shuts down cleanly (its
// record is deleted), once its heartbeat is older than the lease TTL
// when it is killed; an instance with other keys then starts.
func TestSessionKeysOfStoppedInstancesDoNotCount(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	ws := writeFile(t, "ws.yaml", clientWorkspace)
	if code, out := runBinary(t, keysEnv(oldKey), "migrate", "--db", url); code != 0 {
		t.Fatalf("migrate: %s", out)
	}
	store, err := db.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	// Killed: its record stays but stops counting with its heartbeat.
	addr := testkit.FreeAddr(t)
	killed, logPath := startServe(t, keysEnv(oldKey), "--addr", addr, "--db", url, "--workspace", ws)
	waitReady(t, http.DefaultClient, "http://"+addr, logPath)
	id := instanceID(t, logPath)
	refusedForKeys(t, url, ws, []string{id}, otherKey)
	if err := killed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = killed.Wait()
	testkit.Eventually(t, 30*time.Second, "the killed instance's heartbeat to be older than the lease TTL (1s)", func() bool {
		var n int
		err := store.RawReader().Get(&n, `SELECT COUNT(*) FROM workers WHERE owner = ? AND heartbeat_at >= ?`, id, time.Now().Add(-1100*time.Millisecond).UnixMilli())
		return err == nil && n == 0
	})
	addr = testkit.FreeAddr(t)
	clean, logPath := startServe(t, keysEnv(otherKey), "--addr", addr, "--db", url, "--workspace", ws)
	waitReady(t, http.DefaultClient, "http://"+addr, logPath)
	id = instanceID(t, logPath)

	// Stopped cleanly: its record goes at once.
	if err := clean.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := clean.Wait(); err != nil {
		b, _ := os.ReadFile(logPath)
		t.Fatalf("clean stop: %v\n%s", err, b)
	}
	var n int
	if err := store.RawReader().Get(&n, `SELECT COUNT(*) FROM instance_session_keys WHERE owner = ?`, id); err != nil || n != 0 {
		t.Fatalf("the record of the instance stopped cleanly: %d rows (%v), want none", n, err)
	}
	serveBinary(t, keysEnv(newKey), "--db", url, "--workspace", ws)
}
