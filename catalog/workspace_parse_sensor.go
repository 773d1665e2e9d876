package catalog

import (
	"time"

	"gopkg.in/yaml.v3"
)

var sensorFields = []string{"assets", "evaluator", "interval", "timeout", "chunk_size", "max_concurrent_runs", "priority", "enabled"}

// parseSensors reads the sensors section; assets are parsed already.
func (p *wsParser) parseSensors(w *Workspace, n *yaml.Node) {
	ps, _ := p.pairs(n, "sensors", "sensors")
	for _, e := range ps {
		name, field := e.k.Value, join("sensors", e.k.Value)
		if !assetKeyRe.MatchString(name) || len(name) > 100 {
			p.add(e.k, field, "sensor name %q may only use letters, digits, '_', '.' and '-' (at most 100)", name)
			continue
		}
		if w.Schedule(name) != nil {
			p.add(e.k, field, "%q names a schedule already; give the sensor another name", name)
			continue
		}
		if s := p.parseSensor(w, e.k, e.v, field); s != nil {
			w.Sensors = append(w.Sensors, s)
		}
	}
}

func (p *wsParser) parseSensor(w *Workspace, k, v *yaml.Node, field string) *Sensor {
	s := &Sensor{Name: k.Value, Line: k.Line, Interval: DefaultSensorInterval, Timeout: DefaultSensorTimeout, Enabled: true}
	f, _ := p.fields(v, field, "a sensor", sensorFields)
	var ok bool
	s.Assets, ok = p.assetList(w, k, v, f, field)
	if n, has := f["evaluator"]; has {
		ex := p.parseEvaluator(n, join(field, "evaluator"))
		switch ex.Kind {
		case ExecutorCommand, ExecutorHTTP:
			s.Evaluator = &ex
		case ExecutorDemo:
			p.add(n, join(field, "evaluator"), "an evaluator is a command or an http endpoint that answers JSON, not demo")
			ok = false
		default:
			ok = false // reported by parseExecutor
		}
	}
	if !p.launchFields(f, field, &s.ChunkSize, &s.MaxConcurrent, &s.Priority, &s.Enabled) {
		ok = false
	}
	if !p.sensorDuration(s, f, field, "interval", MinSensorInterval, 24*time.Hour, &s.Interval) {
		ok = false
	}
	if !p.sensorDuration(s, f, field, "timeout", time.Second, MaxSensorTimeout, &s.Timeout) {
		ok = false
	}
	if !ok {
		return nil
	}
	return s
}

// sensorDuration reads a poll sensor's duration name into into when it is
// within [lo, hi]; a push sensor has none.
func (p *wsParser) sensorDuration(s *Sensor, f map[string]*yaml.Node, field, name string, lo, hi time.Duration, into *time.Duration) bool {
	n, has := f[name]
	if !has {
		return true
	}
	if s.Evaluator == nil {
		p.add(n, join(field, name), "%s only applies to a sensor with an evaluator (a push sensor is called, it does not poll); remove it or add an evaluator", name)
		return false
	}
	return bounded(p, n, join(field, name), name, p.duration, lo, hi, FormatDuration, into)
}
