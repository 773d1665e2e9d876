package handlers_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
)

// An hourly asset of some 315,000 partitions, in a pool that runs one chunk
// a day: a backfill created here stays PENDING or all but idle.
var bigKeysWS = `pools:
  held: {max_concurrent_runs: 1, throttle: 1/d}
` + testkit.Assets(
	testkit.Asset("h.hourly", `{hourly: {start: "1990-01-01-00:00"}}`, "pool: held"),
)

// hourKeys are the first n keys of h.hourly.
func hourKeys(n int) []string {
	start := time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = start.Add(time.Duration(i) * time.Hour).Format("2006-01-02-15:04")
	}
	return keys
}

// bigKeysBody is a backfill request of h.hourly listing keys, each
// written as raw[i] when raw has it (JSON already), else quoted.
func bigKeysBody(keys []string, raw map[int]string) string {
	var b strings.Builder
	b.WriteString(`{"assets": ["h.hourly"], "chunk_size": 1000, "selector": {"type": "explicit", "keys": [`)
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		if r, ok := raw[i]; ok {
			b.WriteString(r)
		} else {
			b.WriteString(strconv.Quote(k))
		}
	}
	b.WriteString("]}}")
	return b.String()
}

// A list of 210,000 keys (a 4.2 MB body) with one bad key deep inside is
// refused whole, by create and preview alike: the 400 names the key by its
// place in the list and says what is wrong with it, and nothing is written.
func TestBigExplicitListBadKeyInTheMiddle(t *testing.T) {
	testkit.SkipInRacePass(t)
	t.Parallel()
	env, tok := operatorEnv(t, bigKeysWS)
	keys := hourKeys(210_000)
	for _, c := range []struct {
		name  string
		at    int
		raw   string
		field string
		msg   []string
	}{
		{"not a window's key", 150_000, `"1990-01-01-00:30"`, "selector.keys[150000]",
			[]string{`asset h.hourly: partition key "1990-01-01-00:30"`, "not the key of an hourly window; the window containing it is 1990-01-01-00:00"}},
		{"after the last partition", 209_999, `"2999-01-01-00:00"`, "selector.keys[209999]", []string{`"2999-01-01-00:00"`, "after the last partition"}},
		{"no such date", 200_001, `"1990-02-30-00:00"`, "selector.keys[200001]", []string{`"1990-02-30-00:00"`, "expected an hourly key like 1990-01-01-00:00"}},
		{"a number", 123_456, `17`, "selector.keys[123456]", []string{"selector.keys[123456] must be a string, not a JSON number"}},
		{"null", 99_999, `null`, "selector.keys[99999]", []string{"selector.keys[99999] must be a string, not null"}},
		{"invalid UTF-8", 180_000, "\"1990-01-01-0\xff:00\"", "selector.keys[180000]", []string{"selector.keys[180000] holds invalid UTF-8", "byte 0xff"}},
	} {
		body := bigKeysBody(keys, map[int]string{c.at: c.raw})
		before := apiCountEvents(t, env)
		for _, path := range []string{"/api/v1/backfills", "/api/v1/backfills/preview"} {
			code, out := apiCall(t, env, tok, "POST", path, body)
			e, _ := out["error"].(map[string]any)
			msg, _ := e["message"].(string)
			if code != http.StatusBadRequest || e["code"] != "invalid" || e["field"] != c.field {
				t.Fatalf("%s, %s: %d %.500v; want 400 invalid on %s", c.name, path, code, out, c.field)
			}
			for _, w := range c.msg {
				if !strings.Contains(msg, w) {
					t.Errorf("%s, %s: message %q lacks %q", c.name, path, msg, w)
				}
			}
		}
		if after := apiCountEvents(t, env); after != before {
			t.Fatalf("%s: wrote %d events", c.name, after-before)
		}
	}
	_, list := apiCall(t, env, tok, "GET", "/api/v1/backfills", "")
	if n := len(list["backfills"].([]any)); n != 0 {
		t.Fatalf("bad lists created %d backfills", n)
	}
}

// A big list in a random order with repeated keys selects each key once, in
// the order of its first appearance, whether its keys are read straight
// from the body or, one of them being written with an escape, by the
// generic decoder; the preview says the same.
func TestBigExplicitListKeepsOrderDropsDuplicates(t *testing.T) {
	testkit.SkipInRacePass(t)
	t.Parallel()
	env, tok := operatorEnv(t, bigKeysWS)
	unique := hourKeys(100_000)
	r := rand.New(rand.NewPCG(1, 9))
	r.Shuffle(len(unique), func(i, j int) { unique[i], unique[j] = unique[j], unique[i] })
	keys := slices.Clone(unique)
	for range 3000 { // repeats, each after its first appearance
		i := r.IntN(len(keys))
		j := i + 1 + r.IntN(len(keys)-i)
		keys = slices.Insert(keys, j, keys[i])
	}
	escaped := fmt.Sprintf(`"%s\u003%c"`, unique[7][:len(unique[7])-1], unique[7][len(unique[7])-1])
	for _, raw := range []map[int]string{nil, {7: escaped}} {
		body := bigKeysBody(keys, raw)
		code, pv := apiCall(t, env, tok, "POST", "/api/v1/backfills/preview", body)
		if code != http.StatusOK || pv["total_partitions"] != float64(len(unique)) {
			t.Fatalf("preview: %d %.300v; want %d partitions", code, pv, len(unique))
		}
		first := pv["first_chunk"].(map[string]any)["keys"].([]any)
		for i, k := range first {
			if k != unique[i] {
				t.Fatalf("preview's first chunk key %d is %v, not %s", i, k, unique[i])
			}
		}
		code, b := apiCall(t, env, tok, "POST", "/api/v1/backfills", body)
		if code != http.StatusCreated || b["total_partitions"] != float64(len(unique)) {
			t.Fatalf("create: %d %.300v; want %d partitions", code, b, len(unique))
		}
		stored, err := db.BackfillKeys(t.Context(), env.Store.RawReader(), b["id"].(string), 0, int64(len(keys)))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(stored, unique) {
			t.Fatalf("stored %d keys, want the %d unique ones in order of first appearance", len(stored), len(unique))
		}
	}
}
