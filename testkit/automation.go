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
	e.Handler.Scheduler = jobs.NewScheduler(e.engine(t, "StartScheduler"), e.Handler.Log)
	return e.Handler.Scheduler
}

// StartSensors gives the server its sensors (evaluate now, pause, resume,
// cursor resets) on its engine, which StartEngine must have started. Their
// loop does not run: poll sensors are evaluated when the test asks
// (Sensors.Evaluate, or the API), so that a test decides when.
func (e *Env) StartSensors(t testing.TB) *jobs.Sensors {
	t.Helper()
	e.Handler.Sensors = jobs.NewSensors(e.engine(t, "StartSensors"), e.Handler.Log)
	return e.Handler.Sensors
}

// engine is the server's engine, which caller needs started.
func (e *Env) engine(t testing.TB, caller string) *jobs.Engine {
	t.Helper()
	if e.Handler.Engine == nil {
		t.Fatal(caller + " needs the engine: call StartEngine first")
	}
	return e.Handler.Engine
}
