package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/testkit"
)

// signInFrom posts the sign-in form from addr (the server trusts
// X-Forwarded-For in these tests); wrote, when set, is called once the
// request is on the wire.
func signInFrom(t *testing.T, env *testkit.Env, addr, name, password string, wrote func()) (int, string, http.Header) {
	t.Helper()
	c := env.Anon()
	tok := env.CSRF(t, c)
	form := url.Values{"name": {name}, "password": {password}, "_csrf": {tok}}
	ctx := context.Background()
	if wrote != nil {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote() }})
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, env.URL+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if addr != "" {
		req.Header.Set("X-Forwarded-For", addr)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Error(err)
		return 0, "", nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// storm sends n-1 wrong sign-ins at once and, once they are all on the
// wire and the server has counted the limit's worth of them (reserved
// holds), the right one; it returns the wrong ones' statuses and the right
// one's answer.
func storm(t *testing.T, env *testkit.Env, n, reserved int, wrong func(i int) (addr, name string), right func() (addr, name, pw string)) (map[int]int, int, string) {
	var mu sync.Mutex
	statuses := map[int]int{}
	var sent, done sync.WaitGroup
	for i := range n - 1 {
		sent.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			addr, name := wrong(i)
			var once sync.Once
			st, _, _ := signInFrom(t, env, addr, name, "wrong password!", func() { once.Do(sent.Done) })
			once.Do(sent.Done)
			mu.Lock()
			statuses[st]++
			mu.Unlock()
		}()
	}
	sent.Wait()
	testkit.Eventually(t, 10*time.Second, "the limit's sign-ins to be counted", func() bool {
		var c int
		return env.Store.RawReader().Get(&c, `SELECT COUNT(*) FROM login_failures`) == nil && c >= reserved
	})
	addr, name, pw := right()
	st, page, _ := signInFrom(t, env, addr, name, pw, nil)
	done.Wait()
	return statuses, st, page
}

// TestConcurrentSignInsCountEach: sign-ins sent at once for one account
// from one address count one each: with a limit of 5, 39 wrong passwords
// sent together get 5 answers 401 and 34 answers 429, and the right
// password sent while they are in flight is refused (before, the limit was
// checked before the password and counted after it: 39 × 401 and a
// sign-in).
// stormHashWait is how long the storms' sign-ins may wait for one of the
// two password check slots: under make test's load a check took over a
// second, and the default 3 s wait answered some of them 503 (busy), which
// these tests do not test (TestBusyPasswordChecksAnswer503 does).
const stormHashWait = time.Minute

func TestConcurrentSignInsCountEach(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{Auth: &handlers.AuthConfig{LoginLimit: auth.Limit{Failures: 5, Window: time.Minute}, FailureDelay: -1, HashSlots: 2, HashWait: stormHashWait}})
	env.CreateUser(t, "carol", auth.RoleViewer, testkit.TestPassword)
	statuses, st, page := storm(t, env, 40, 5, func(int) (string, string) { return "", "carol" }, func() (string, string, string) { return "", "carol", testkit.TestPassword })
	if statuses[http.StatusUnauthorized] != 5 || statuses[http.StatusTooManyRequests] != 34 {
		t.Fatalf("39 wrong sign-ins at once under a limit of 5 answered %v, want 5 × 401 and 34 × 429", statuses)
	}
	if st != http.StatusTooManyRequests || !strings.Contains(page, "too many failed sign-ins") {
		t.Fatalf("the right password sent with them: %d, want 429 saying why", st)
	}
}

// TestConcurrentSignInsCountPerAddressAndAccount: the limit holds for
// sign-ins sent at once to many accounts from one address, and to one
// account from many addresses.
func TestConcurrentSignInsCountPerAddressAndAccount(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{Auth: &handlers.AuthConfig{LoginLimit: auth.Limit{Failures: 5, Window: time.Minute}, FailureDelay: -1, TrustProxy: true, HashSlots: 2, HashWait: stormHashWait}})
	env.CreateUser(t, "dora", auth.RoleViewer, testkit.TestPassword)
	env.CreateUser(t, "erin", auth.RoleViewer, testkit.TestPassword)

	// One address, a different unknown name each time, then dora.
	statuses, st, page := storm(t, env, 30, 5, func(i int) (string, string) { return "192.0.2.1", "nobody" + string(rune('a'+i)) },
		func() (string, string, string) { return "192.0.2.1", "dora", testkit.TestPassword })
	if statuses[http.StatusUnauthorized] != 5 || st != http.StatusTooManyRequests || !strings.Contains(page, "from your address") {
		t.Fatalf("one address, many names: %v then %d, want 5 × 401 then 429 for the address", statuses, st)
	}
	// One account from many addresses, then the right password from a new one.
	statuses, st, page = storm(t, env, 30, 10, func(i int) (string, string) { return "198.51.100." + itoa(int64(i+1)), "erin" },
		func() (string, string, string) { return "203.0.113.9", "erin", testkit.TestPassword })
	if statuses[http.StatusUnauthorized] != 5 || st != http.StatusTooManyRequests || !strings.Contains(page, "for this account") {
		t.Fatalf("one account, many addresses: %v then %d, want 5 × 401 then 429 for the account", statuses, st)
	}
}

// TestAccountLockSparesItsOwner: failures from elsewhere lock an account
// only for addresses that did not sign in to it: its owner, from an address
// it signed in from, still gets in; from a new address it is refused until
// an admin unlocks it (page), and the lock and the unlock are in the event
// log.
func TestAccountLockSparesItsOwner(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{Auth: &handlers.AuthConfig{LoginLimit: auth.Limit{Failures: 5, Window: time.Hour}, FailureDelay: -1, TrustProxy: true}})
	id := env.CreateUser(t, "fay", auth.RoleOperator, testkit.TestPassword)
	if st, _, _ := signInFrom(t, env, "192.0.2.10", "fay", testkit.TestPassword, nil); st != http.StatusSeeOther {
		t.Fatalf("fay's first sign-in: %d", st)
	}
	for i := range 5 { // an attacker who knows the name, from five addresses
		if st, _, _ := signInFrom(t, env, "198.51.100."+itoa(int64(i+1)), "Fay", "guess number "+itoa(int64(i)), nil); st != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d", i, st)
		}
	}
	st, page, h := signInFrom(t, env, "198.51.100.99", "fay", testkit.TestPassword, nil)
	if st != http.StatusTooManyRequests || !strings.Contains(page, "ask an admin to unlock") || h.Get("Retry-After") == "" {
		t.Fatalf("locked account from a new address: %d Retry-After %q", st, h.Get("Retry-After"))
	}
	if st, _, _ := signInFrom(t, env, "192.0.2.10", "fay", testkit.TestPassword, nil); st != http.StatusSeeOther {
		t.Fatalf("fay from the address she signed in from: %d, want 303 (the lock must not lock her out)", st)
	}
	if st, _, _ := signInFrom(t, env, "192.0.2.11", "fay", testkit.TestPassword, nil); st != http.StatusTooManyRequests {
		t.Fatalf("fay from a new address: %d, want 429 until unlocked", st)
	}

	admin := env.Client(t, auth.RoleAdmin)
	_, html := env.GetText(t, admin, "/admin/users")
	if !strings.Contains(html, `data-testid="locked"`) || !strings.Contains(html, "5 failed sign-ins from 5 addresses") || !strings.Contains(html, "/admin/users/"+itoa(id)+"/unlock") {
		t.Fatalf("the Users page does not show fay's lock with an Unlock button")
	}
	if r := env.SessionPost(t, admin, "/admin/users/"+itoa(id)+"/unlock", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("unlock: %d", r.StatusCode)
	}
	if _, html := env.GetText(t, admin, "/admin/users"); strings.Contains(html, `data-testid="locked"`) || !strings.Contains(html, "Unlocked fay (forgot 5 failed sign-ins).") {
		t.Fatalf("after unlock the page still shows the lock, or no notice")
	}
	if st, _, _ := signInFrom(t, env, "192.0.2.11", "fay", testkit.TestPassword, nil); st != http.StatusSeeOther {
		t.Fatalf("fay from a new address after the unlock: %d", st)
	}
	var types []string
	if err := env.Store.RawReader().Select(&types, `SELECT type FROM events WHERE subject = 'user:fay' AND type IN ('login.locked_out', 'user.unlocked') ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	if strings.Join(types, ",") != "login.locked_out,user.unlocked" {
		t.Fatalf("event log of fay: %v, want the lockout and the unlock", types)
	}
}

// TestAPIUnlock: the users API shows a lock and lifts it with
// {"unlock": true}; {"unlock": false} is refused and changes nothing.
func TestAPIUnlock(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{Auth: &handlers.AuthConfig{LoginLimit: auth.Limit{Failures: 2, Window: time.Hour}, FailureDelay: -1, TrustProxy: true}})
	id := env.CreateUser(t, "gus", auth.RoleViewer, testkit.TestPassword)
	for i := range 2 {
		signInFrom(t, env, "198.51.100."+itoa(int64(i+1)), "gus", "wrong password!", nil)
	}
	tok := env.AdminToken()
	r := env.BearerDo(t, "GET", "/api/v1/users", tok, "", "")
	if b := body(t, r); !strings.Contains(b, `"name":"gus"`) || !strings.Contains(b, `"locked":{"failures":2,"addresses":2,"until":"`) {
		t.Fatalf("users list does not show gus's lock: %s", b)
	} else if until := regexp.MustCompile(`"until":"([^"]*)"`).FindStringSubmatch(b); !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(until[1]) {
		t.Errorf("locked.until %q, want the API's one shape of a time, 2025-01-31T12:00:00.000Z", until[1])
	}
	r = env.BearerDo(t, "POST", "/api/v1/users/"+itoa(id), tok, "application/json", `{"unlock": false}`)
	if b := body(t, r); r.StatusCode != http.StatusBadRequest || !strings.Contains(b, `"field":"unlock"`) {
		t.Fatalf("unlock false: %d %s", r.StatusCode, b)
	}
	if st, _, _ := signInFrom(t, env, "203.0.113.1", "gus", testkit.TestPassword, nil); st != http.StatusTooManyRequests {
		t.Fatalf("a refused unlock lifted the lock: %d", st)
	}
	r = env.BearerDo(t, "POST", "/api/v1/users/"+itoa(id), tok, "application/json", `{"unlock": true}`)
	if b := body(t, r); r.StatusCode != http.StatusOK || strings.Contains(b, `"locked"`) {
		t.Fatalf("unlock: %d %s", r.StatusCode, b)
	}
	if st, _, _ := signInFrom(t, env, "203.0.113.1", "gus", testkit.TestPassword, nil); st != http.StatusSeeOther {
		t.Fatalf("gus after the unlock: %d", st)
	}
}

// TestBusyPasswordChecksAnswer503: while every password check slot is
// taken a sign-in waits HashWait, then is answered 503 with Retry-After and
// a message, and it does not count against the limit.
func TestBusyPasswordChecksAnswer503(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{Auth: &handlers.AuthConfig{LoginLimit: auth.Limit{Failures: 2, Window: time.Hour}, FailureDelay: -1, HashSlots: 1, HashWait: 50 * time.Millisecond}})
	env.CreateUser(t, "hal", auth.RoleViewer, testkit.TestPassword)
	if n := env.Handler.Auth.HashSlots(); n != 1 {
		t.Fatalf("hash slots %d, want 1", n)
	}
	release, err := env.Handler.Auth.PasswordCheckSlots().Acquire(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // more than the limit: none of them counts
		st, page, h := signInFrom(t, env, "", "hal", "wrong password!", nil)
		if st != http.StatusServiceUnavailable || h.Get("Retry-After") != "2" || !strings.Contains(page, "too many sign-ins at once") {
			release()
			t.Fatalf("sign-in while the slot is taken: %d Retry-After %q", st, h.Get("Retry-After"))
		}
	}
	release()
	if st, _, _ := signInFrom(t, env, "", "hal", testkit.TestPassword, nil); st != http.StatusSeeOther {
		t.Fatalf("sign-in once a slot is free: %d, want 303 (refusals for a busy server must not count as failures)", st)
	}
}

// TestSignInAddressIsTheProxys: behind a trusted proxy the address is the
// last X-Forwarded-For entry (the one the proxy appends), in one spelling
// per address, and IPv6 counts per /64: a client that writes the owner's
// address first in the header cannot spend the owner's limit, nor get more
// tries by spelling or rotating addresses.
func TestSignInAddressIsTheProxys(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{Auth: &handlers.AuthConfig{LoginLimit: auth.Limit{Failures: 3, Window: time.Hour}, FailureDelay: -1, TrustProxy: true}})
	env.CreateUser(t, "kim", auth.RoleViewer, testkit.TestPassword)
	if st, _, _ := signInFrom(t, env, "10.0.0.7", "kim", testkit.TestPassword, nil); st != http.StatusSeeOther {
		t.Fatalf("kim from 10.0.0.7: %d", st)
	}
	// An attacker at 10.66.0.1 claims 10.0.0.7 (the proxy appends its own view).
	for range 3 {
		signInFrom(t, env, "10.0.0.7, 10.66.0.1", "nobody", "wrong password!", nil)
	}
	if st, page, _ := signInFrom(t, env, "10.0.0.7, 10.66.0.1", "nobody", "wrong password!", nil); st != http.StatusTooManyRequests || !strings.Contains(page, "from your address") {
		t.Fatalf("the attacker's 4th try: %d, want 429 for its own address", st)
	}
	if st, _, _ := signInFrom(t, env, "10.0.0.7", "kim", testkit.TestPassword, nil); st != http.StatusSeeOther {
		t.Fatalf("kim after the attacker wrote her address first: %d, want 303", st)
	}
	// One IPv6 /64, spelt and rotated three ways: one address for the limit.
	for i, a := range []string{"2001:db8:1:2::1", "2001:DB8:1:2:0::1", "[2001:db8:1:2:0:0:0:9]"} {
		if st, _, _ := signInFrom(t, env, a, "v6guess"+itoa(int64(i)), "wrong password!", nil); st == http.StatusTooManyRequests {
			t.Fatalf("blocked before the limit at %s", a)
		}
	}
	if st, _, _ := signInFrom(t, env, "2001:db8:1:2::42", "v6guess9", "wrong password!", nil); st != http.StatusTooManyRequests {
		t.Fatalf("another address of the same /64: %d, want 429 (the /64 had 3 failures, the limit)", st)
	}
}

// TestSharedAddressSparesItsOwner: at an address shared by many (an office
// behind NAT), others' typos on other accounts do not lock out an owner who
// signed in from it; the owner's own failures there still count.
func TestSharedAddressSparesItsOwner(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{Auth: &handlers.AuthConfig{LoginLimit: auth.Limit{Failures: 3, Window: time.Hour}, FailureDelay: -1, TrustProxy: true}})
	env.CreateUser(t, "bob", auth.RoleViewer, testkit.TestPassword)
	const office = "192.0.2.200"
	if st, _, _ := signInFrom(t, env, office, "bob", testkit.TestPassword, nil); st != http.StatusSeeOther {
		t.Fatalf("bob: %d", st)
	}
	for _, who := range []string{"ann", "cy", "dee"} {
		signInFrom(t, env, office, who, "wrong password!", nil)
	}
	if st, _, _ := signInFrom(t, env, office, "eve", "wrong password!", nil); st != http.StatusTooManyRequests {
		t.Fatalf("a colleague without a sign-in there after 3 failures: %d, want 429", st)
	}
	if st, _, _ := signInFrom(t, env, office, "bob", testkit.TestPassword, nil); st != http.StatusSeeOther {
		t.Fatalf("bob after colleagues' typos: %d, want 303", st)
	}
	for range 3 {
		signInFrom(t, env, office, "bob", "wrong password!", nil)
	}
	if st, _, _ := signInFrom(t, env, office, "bob", testkit.TestPassword, nil); st != http.StatusTooManyRequests {
		t.Fatalf("bob after 3 failures of his own there: %d, want 429", st)
	}
}

// TestLongSignInNamesAreNotStored: a name longer than any account's (a megabyte
// of it) is refused like a wrong password and counted for its address, but
// neither stored nor logged in full.
func TestLongSignInNamesAreNotStored(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{Auth: &handlers.AuthConfig{LoginLimit: auth.Limit{Failures: 2, Window: time.Hour}, FailureDelay: -1}})
	long := strings.Repeat("n", 1<<20)
	for range 2 {
		if st, _, _ := signInFrom(t, env, "", long, "wrong password!", nil); st != http.StatusUnauthorized {
			t.Fatalf("long name: %d", st)
		}
	}
	if st, _, _ := signInFrom(t, env, "", long, "wrong password!", nil); st != http.StatusTooManyRequests {
		t.Fatalf("long names must count for their address: %d", st)
	}
	var biggest int
	if err := env.Store.RawReader().Get(&biggest, `SELECT MAX(n) FROM (SELECT COALESCE(MAX(LENGTH(account)), 0) AS n FROM login_failures UNION ALL SELECT COALESCE(MAX(LENGTH(payload)), 0) FROM events)`); err != nil {
		t.Fatal(err)
	}
	if biggest > 1000 {
		t.Fatalf("a %d-byte value was stored for a 1 MiB sign-in name", biggest)
	}
}
