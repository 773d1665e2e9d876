package jobs

import (
	"context"
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
	// Stamped again when the executor begins, and once the command's
	// process has started: the latest counts, an earlier stamp never
	// moves it back.
	p.launch([]*active{{run: db.Run{ID: "run_a"}, attempt: 1, pool: "slow"}}, at.Add(950*time.Millisecond))
	p.launch([]*active{{run: db.Run{ID: "run_a"}, attempt: 1, pool: "slow"}}, at.Add(920*time.Millisecond))
	if got := p.started(mine); got != 10_950 {
		t.Errorf("after a later launch stamp the attempt counts from %d, want 10950", got)
	}
	p.forgetLaunches(10_000)
	if got := p.started(mine); got != 10_950 {
		t.Errorf("a launch within reach was forgotten: %d", got)
	}
	p.forgetLaunches(11_000)
	if got := p.started(mine); got != 10_000 || len(p.launched) != 0 {
		t.Errorf("after forgetting: %d (%d launches kept), want the recorded 10000 and none", got, len(p.launched))
	}
}

// A command tells its work it has begun once its process has started (a
// pool's throttle counts the attempt from then), and not when it could not
// start.
func TestCommandSaysWhenItsProcessStarted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		command []string
		began   bool
	}{{[]string{"true"}, true}, {[]string{dir + "/no-such-command"}, false}} {
		var at time.Time
		w := Work{Partitions: []string{"p1"}, ReportPath: dir + "/report.jsonl", Def: commandAsset(c.command, false),
			began: func() { at = time.Now() }}
		before := time.Now()
		res := CommandExecutor{}.Execute(context.Background(), w)
		if c.began && (at.Before(before) || res.Err != nil) {
			t.Errorf("%v: began at %v (the call at %v), err %v: want it told after the process started", c.command, at, before, res.Err)
		}
		if !c.began && !at.IsZero() {
			t.Errorf("%v could not start, yet its work was told it began", c.command)
		}
	}
}
