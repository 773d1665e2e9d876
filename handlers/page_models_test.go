package handlers_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
)

// Viewers of the asset page share its model for a moment, but not across
// roles (an operator's page offers the selection bar, a viewer's does
// not), and a report of a partition shows at once on it, the status board
// and the overview, however recently their models were built.
func TestPageModelsSharedPerRoleAndFresh(t *testing.T) {
	t.Parallel()
	env := statusEnvAt(t, T0.Add(10*time.Hour))
	viewer, operator := env.Client(t, auth.RoleViewer), env.Client(t, auth.RoleOperator)
	legend := func() string {
		t.Helper()
		_, doc := pgGet(t, env, viewer, "/assets/s.static")
		return strings.Join(strings.Fields(doc.Find(`[data-testid="legend"]`).First().Text()), " ")
	}
	fresh := func() int64 {
		t.Helper()
		var board struct {
			Assets []struct {
				Key   string `json:"asset"`
				Fresh int64  `json:"fresh"`
			} `json:"assets"`
		}
		resp, err := env.Get("/status.json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&board); err != nil {
			t.Fatal(err)
		}
		for _, a := range board.Assets {
			if a.Key == "s.static" {
				return a.Fresh
			}
		}
		t.Fatal("s.static not on the status board")
		return 0
	}
	overview := func() string {
		t.Helper()
		_, doc := pgGet(t, env, viewer, "/")
		return doc.Text()
	}
	before, freshBefore, overviewBefore := legend(), fresh(), overview()
	for range 3 { // back to back, well within the sharing
		if _, doc := pgGet(t, env, operator, "/assets/s.static"); doc.Find(`[data-testid="selection-bar"]`).Length() != 1 {
			t.Fatal("the operator's asset page lacks the selection bar")
		}
		if _, doc := pgGet(t, env, viewer, "/assets/s.static"); doc.Find(`[data-testid="selection-bar"]`).Length() != 0 {
			t.Fatal("the viewer's asset page offers the selection bar (an operator's model shared)")
		}
	}
	if !strings.Contains(before, "Materialized, fresh 0") {
		t.Fatalf("legend before any report: %q", before)
	}
	mat(t, env, "s.static", "a", "v2", T0)
	if after := legend(); !strings.Contains(after, "Materialized, fresh 1") {
		t.Fatalf("legend right after a report: %q, want it counted at once", after)
	}
	if n := fresh(); n != freshBefore+1 {
		t.Fatalf("status board right after a report: %d fresh, want %d", n, freshBefore+1)
	}
	if overview() == overviewBefore {
		t.Fatal("the overview unchanged right after a report")
	}
}
