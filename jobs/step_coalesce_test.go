package jobs

import (
	"testing"
	"time"
)

// A step woken by a completion finishes, in the same step, the running
// attempts that complete within the coalescing window (group commit), and
// returns as soon as every running attempt has completed; an attempt that
// does not complete within the window is left for a later step.
func TestStepGathersCompletionsWithinWindow(t *testing.T) {
	t.Parallel()
	e := &Engine{done: make(chan completion, 8), running: map[string]*active{"run_a": nil, "run_b": nil, "run_c": nil}}
	go func() {
		for range 2 {
			time.Sleep(200 * time.Microsecond) // the attempts end one after the other
			e.done <- completion{}
		}
	}()
	start := time.Now()
	got := e.gather([]completion{{}}, 10*time.Second)
	if len(got) != 3 {
		t.Fatalf("gathered %d completions, want all 3", len(got))
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("gather waited %v after the last running attempt completed", el)
	}

	// run_c never completes: the step goes on with the others once the
	// window is over.
	e.done <- completion{}
	start = time.Now()
	got = e.gather([]completion{{}}, 30*time.Millisecond)
	if el := time.Since(start); len(got) != 2 || el < 30*time.Millisecond {
		t.Fatalf("gathered %d completions in %v, want 2 after the window of 30ms", len(got), el)
	}
}
