package poll

import (
	"testing"
	"time"
)

// Eventually calls cond every few milliseconds until it holds, and fails
// the test saying what was awaited when it has not held within timeout.
// Tests wait with it instead of sleeping a fixed time.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	wait := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", timeout, what)
		}
		time.Sleep(wait)
		wait = min(2*wait, 50*time.Millisecond)
	}
}
