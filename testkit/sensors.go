package testkit

import (
	"testing"

	"github.com/tessera-dev/tessera/jobs"
)

// StartSensors gives the server its sensors (evaluate now, pause, resume,
// cursor resets) on its engine, which StartEngine must have started. Their
// loop does not run: poll sensors are evaluated when the test asks
// (Sensors.Evaluate, or the API), so that a test decides when.
func (e *Env) StartSensors(t testing.TB) *jobs.Sensors {
	t.Helper()
	if e.Handler.Engine == nil {
		t.Fatal("StartSensors needs the engine: call StartEngine first")
	}
	s := jobs.NewSensors(e.Handler.Engine, e.Handler.Log)
	e.Handler.Sensors = s
	return s
}
