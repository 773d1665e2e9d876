package handlers_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
)

// The asset page's legend, which splits materialized partitions into fresh
// and stale, says both are materialized: its numbers then add up to the
// materialized count the backfill preview and the API give.
func TestAssetLegendSaysStaleIsMaterialized(t *testing.T) {
	t.Parallel()
	env := statusEnvAt(t, T0.Add(10*time.Hour))
	mat(t, env, "s.static", "a", "v2", T0) // fresh
	mat(t, env, "s.static", "b", "v1", T0) // code changed: stale
	_, doc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/assets/s.static")
	legend := strings.Join(strings.Fields(doc.Find(`[data-testid="legend"]`).First().Text()), " ")
	for _, want := range []string{"Materialized, fresh 1", "Materialized, stale 1"} {
		if !strings.Contains(legend, want) {
			t.Errorf("legend %q lacks %q", legend, want)
		}
	}
}
