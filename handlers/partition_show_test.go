package handlers_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
)

// The partition page writes an instance's duration as every other page does
// ("1 min 0 s"), not in Go's notation ("1m0s").
func TestPartitionHistoryDurationReadsLikeOtherPages(t *testing.T) {
	t.Parallel()
	env := statusEnvAt(t, T0.Add(time.Hour))
	mat(t, env, "s.static", "a", "v2", T0) // started a minute before T0
	_, doc := pgGet(t, env, env.Client(t, auth.RoleViewer), "/assets/s.static/partitions/a")
	got := strings.TrimSpace(doc.Find(`[data-testid="instance"]`).First().Children().Eq(5).Text())
	if got != "1 min 0 s" {
		t.Errorf("instance duration %q, want 1 min 0 s", got)
	}
}
