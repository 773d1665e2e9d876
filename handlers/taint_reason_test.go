package handlers_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/testkit"
)

// A taint reason is checked in characters, and control characters other
// than line breaks are refused; a refused taint writes nothing.
func TestTaintReasonText(t *testing.T) {
	env := testkit.New(t, testkit.Options{WorkspaceYAML: statusWS})
	mat(t, env, "s.static", "a", "v2", T0)
	const path = "/api/v1/assets/s.static/partitions/a/taint"
	body := func(reason string) string {
		b, _ := json.Marshal(map[string]string{"reason": reason})
		return string(b)
	}
	for _, c := range []struct{ name, reason, msg string }{
		{"empty", "  ", "a taint needs a reason"},
		{"too long", strings.Repeat("x", 501), "at most 500 characters (got 501)"},
		{"terminal escape", "bad \x1b[31mrows", "control character (U+001B at byte 4)"},
		{"NUL", "bad\x00rows", "control character (U+0000 at byte 3)"},
	} {
		resp := env.Post(t, path, body(c.reason))
		var v struct {
			Error struct{ Message, Field string }
		}
		json.NewDecoder(resp.Body).Decode(&v)
		if resp.StatusCode != 400 || v.Error.Field != "reason" || !strings.Contains(v.Error.Message, c.msg) {
			t.Errorf("%s: %d %+v, want 400 on reason saying %q", c.name, resp.StatusCode, v.Error, c.msg)
		}
		a, err := env.Store.AssetByKey(t.Context(), "s.static")
		if err != nil {
			t.Fatal(err)
		}
		p, err := env.Store.Partition(t.Context(), a.ID, "a")
		if err != nil || p.TaintedAt != nil {
			t.Fatalf("%s: the refused taint wrote: %+v %v", c.name, p, err)
		}
	}
	// 300 accented letters on two lines (as a browser sends a textarea's,
	// \r\n) are 300 characters: accepted.
	if resp := env.Post(t, path, body(strings.Repeat("é", 149)+"\r\n"+strings.Repeat("é", 149))); resp.StatusCode != 200 {
		t.Fatalf("a 300-character reason on two lines: %d", resp.StatusCode)
	}
}
