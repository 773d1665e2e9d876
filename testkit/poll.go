package testkit

import (
	"testing"
	"time"

	"github.com/tessera-dev/tessera/testkit/poll"
)

// Eventually calls cond every few milliseconds until it holds, and fails
// the test saying what was awaited when it has not held within timeout.
// Tests wait with it instead of sleeping a fixed time. (It is
// poll.Eventually, which the tests inside jobs call: testkit imports jobs.)
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	poll.Eventually(t, timeout, what, cond)
}
