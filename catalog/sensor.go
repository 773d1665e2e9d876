package catalog

import "time"

// Sensor bounds.
const (
	MinSensorInterval     = time.Second
	DefaultSensorInterval = 30 * time.Second
	DefaultSensorTimeout  = time.Minute
	MaxSensorTimeout      = time.Hour
	MaxMessageIDLen       = 200
)

// Sensor launches backfills of its assets when something outside happens:
// pushed events (POST …/sensors/{name}/events), or, when it has an
// Evaluator, what the evaluator answers each Interval.
type Sensor struct {
	Name          string
	Assets        []string
	Evaluator     *Executor // nil: a push sensor
	Interval      time.Duration
	Timeout       time.Duration
	ChunkSize     int64
	MaxConcurrent int64
	Priority      int64
	Enabled       bool
	Line          int
}

// Poll reports whether the sensor polls an evaluator.
func (s *Sensor) Poll() bool { return s.Evaluator != nil }

// Sensor returns the sensor named name, or nil.
func (w *Workspace) Sensor(name string) *Sensor { return byName(w.Sensors, name) }

// SensorNames lists the names of the workspace's sensors, in file order.
func (w *Workspace) SensorNames() []string { return namesOf(w.Sensors) }

func (s *Sensor) itemName() string { return s.Name }
