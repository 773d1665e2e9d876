package handlers_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
)

// Viewers of the asset page share its model for a moment, but not across
// roles (an operator's page offers the selection bar, a viewer's does
// not), and a report of a partition shows at once, however recently the
// model was built.
func TestAssetPageModelSharedPerRoleAndFresh(t *testing.T) {
	t.Parallel()
	env := statusEnvAt(t, T0.Add(10*time.Hour))
	viewer, operator := env.Client(t, auth.RoleViewer), env.Client(t, auth.RoleOperator)
	legend := func() string {
		t.Helper()
		_, doc := pgGet(t, env, viewer, "/assets/s.static")
		return strings.Join(strings.Fields(doc.Find(`[data-testid="legend"]`).First().Text()), " ")
	}
	before := legend()
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
}
