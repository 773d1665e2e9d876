package jobs

import (
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
)

// A throttle counts an attempt of this instance from when its command was
// launched (after the step that recorded its start committed), another
// instance's from its recorded start; launches no period reaches are
// forgotten, and the attempt then counts from its recorded start again.
func TestThrottleCountsFromTheLaunch(t *testing.T) {
	p := newPoolState()
	at := time.UnixMilli(10_000)
	p.launch([]*active{
		{run: db.Run{ID: "run_a"}, attempt: 1, pool: "slow"},
		{run: db.Run{ID: "run_b"}, attempt: 2, pool: ""}, // in no pool: not kept
	}, at.Add(900*time.Millisecond))
	mine := db.RunningAttempt{RunID: "run_a", Attempt: 1, StartedAt: 10_000}
	if got := p.started(mine); got != 10_900 {
		t.Errorf("an attempt launched 900 ms after its recorded start counts from %d, want 10900 (the launch)", got)
	}
	if got := p.started(db.RunningAttempt{RunID: "run_a", Attempt: 2, StartedAt: 10_000}); got != 10_000 {
		t.Errorf("another attempt of the run counts from %d, want its recorded 10000", got)
	}
	if got := p.started(db.RunningAttempt{RunID: "run_x", Attempt: 1, Owner: "other", StartedAt: 10_500}); got != 10_500 {
		t.Errorf("another instance's attempt counts from %d, want its recorded 10500", got)
	}
	if _, kept := p.launched[launchKey{"run_b", 2}]; kept {
		t.Error("the launch of an attempt in no pool was kept")
	}
	p.forgetLaunches(10_000)
	if got := p.started(mine); got != 10_900 {
		t.Errorf("a launch within reach was forgotten: %d", got)
	}
	p.forgetLaunches(11_000)
	if got := p.started(mine); got != 10_000 || len(p.launched) != 0 {
		t.Errorf("after forgetting: %d (%d launches kept), want the recorded 10000 and none", got, len(p.launched))
	}
}
