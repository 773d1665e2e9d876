package web

import (
	"context"
	"fmt"
	"testing"
)

// A request the client abandoned is a 499 in the log and the metrics, not a
// server error.
func TestClientClosedRequestIsNotAServerError(t *testing.T) {
	t.Parallel()
	ue := toUserError(fmt.Errorf("preview: %w", context.Canceled))
	if ue == nil || ue.Status != StatusClientClosedRequest {
		t.Fatalf("a canceled request maps to %+v, want 499", ue)
	}
	if toUserError(fmt.Errorf("disk on fire")) != nil {
		t.Fatal("an internal error became a user error")
	}
}
