package testkit

import (
	"testing"

	"github.com/tessera-dev/tessera/jobs"
)

// StartScheduler gives the server a scheduler (pause, resume, run now) on
// its engine, which StartEngine must have started. Its loop does not run:
// ticks happen when the test evaluates them (Scheduler.Evaluate) or runs
// a schedule now, so that a test decides when.
func (e *Env) StartScheduler(t testing.TB) *jobs.Scheduler {
	t.Helper()
	if e.Handler.Engine == nil {
		t.Fatal("StartScheduler needs the engine: call StartEngine first")
	}
	s := jobs.NewScheduler(e.Handler.Engine, e.Handler.Log)
	e.Handler.Scheduler = s
	return s
}
