package jobs

import "testing"

// A schedule's or a sensor's launch settings keep what it sets and take the
// backfill defaults for what it leaves out (0).
func TestLaunchDefaults(t *testing.T) {
	if c, m := LaunchDefaults(0, 0); c != DefaultChunkSize || m != DefaultMaxConcurrentRuns {
		t.Fatalf("LaunchDefaults(0, 0) = %d, %d, want the defaults %d, %d", c, m, DefaultChunkSize, DefaultMaxConcurrentRuns)
	}
	if c, m := LaunchDefaults(7, 2); c != 7 || m != 2 {
		t.Fatalf("LaunchDefaults(7, 2) = %d, %d, want 7, 2", c, m)
	}
}
