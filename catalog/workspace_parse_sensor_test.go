package catalog

import (
	"strings"
	"testing"
	"time"
)

// sensorWS is scheduleWS's assets with a sensors section (first line 11).
func sensorWS(sensors string) string {
	return strings.TrimSuffix(scheduleWS(""), "schedules:\n") + "sensors:\n" + sensors
}

func TestParseSensors(t *testing.T) {
	w, err := ParseWorkspace("w.yaml", []byte(sensorWS(`  arrivals:
    assets: [raw.events]
  upstream:
    assets: [daily.report, raw.events]
    evaluator: {command: [python3, check.py]}
    interval: 10s
    timeout: 5s
    chunk_size: 7
    enabled: false
`)))
	if err != nil {
		t.Fatal(err)
	}
	a, u := w.Sensor("arrivals"), w.Sensor("upstream")
	if a == nil || a.Poll() || a.Interval != DefaultSensorInterval || !a.Enabled || a.Line != 12 {
		t.Fatalf("arrivals = %+v, want a push sensor with defaults at line 12", a)
	}
	if u == nil || !u.Poll() || u.Evaluator.Kind != ExecutorCommand || u.Interval != 10*time.Second || u.Timeout != 5*time.Second || u.ChunkSize != 7 || u.Enabled || len(u.Assets) != 2 {
		t.Fatalf("upstream = %+v", u)
	}
}

func TestSensorProblems(t *testing.T) {
	tests := []problemCase{
		{"unknown asset", "  s:\n    assets: [raw.event]\n", 13, "sensors.s.assets", `unknown asset "raw.event"`},
		{"missing assets", "  s:\n    interval: 5s\n", 12, "sensors.s.assets", "missing assets"},
		{"interval on push", "  s:\n    assets: [raw.events]\n    interval: 5s\n", 14, "sensors.s.interval", "only applies to a sensor with an evaluator"},
		{"interval too short", "  s:\n    assets: [raw.events]\n    evaluator: {command: [x]}\n    interval: 100ms\n", 15, "sensors.s.interval", "between 1s and"},
		{"timeout too long", "  s:\n    assets: [raw.events]\n    evaluator: {command: [x]}\n    timeout: 2h\n", 15, "sensors.s.timeout", "between 1s and 1h"},
		{"demo evaluator", "  s:\n    assets: [raw.events]\n    evaluator: {demo: {}}\n", 14, "sensors.s.evaluator", "not demo"},
		{"bad http evaluator", "  s:\n    assets: [raw.events]\n    evaluator: {http: {url: nowhere}}\n", 14, "sensors.s.evaluator.http.url", "absolute http"},
		{"unknown field", "  s:\n    assets: [raw.events]\n    cursor: x\n", 14, "sensors.s.cursor", "unknown field"},
		{"chunk_size", "  s:\n    assets: [raw.events]\n    chunk_size: 0\n", 14, "sensors.s.chunk_size", "between 1 and 100000"},
		{"max_concurrent_runs", "  s:\n    assets: [raw.events]\n    max_concurrent_runs: 20000\n", 14, "sensors.s.max_concurrent_runs", "between 1 and 10000"},
		{"priority", "  s:\n    assets: [raw.events]\n    priority: 1001\n", 14, "sensors.s.priority", "between -1000 and 1000"},
		{"enabled", "  s:\n    assets: [raw.events]\n    enabled: maybe\n", 14, "sensors.s.enabled", "expected true or false"},
		{"name", "  s s:\n    assets: [raw.events]\n", 12, "sensors.s s", "may only use letters"},
	}
	runProblemCases(t, tests, sensorWS)
}

// TestSensorEvaluatorProblems (issue 22 audit): an evaluator's problems
// speak of an evaluator (command or http), not of an asset's executor and
// its demo kind; an http evaluator's timeout and token_url, which the
// evaluator never used (the sensor's timeout stops it; a token goes in
// headers), are refused rather than silently ignored.
func TestSensorEvaluatorProblems(t *testing.T) {
	tests := []problemCase{
		{"empty evaluator", "  s:\n    assets: [raw.events]\n    evaluator: {}\n", 14, "sensors.s.evaluator", "an evaluator needs command or http, e.g. evaluator: {command: [python3, sensors/check.py]}"},
		{"two kinds", "  s:\n    assets: [raw.events]\n    evaluator: {command: [x], http: {url: \"https://x.example\"}}\n", 14, "sensors.s.evaluator", "an evaluator has exactly one of command or http (found command, http)"},
		{"http timeout", "  s:\n    assets: [raw.events]\n    evaluator: {http: {url: \"https://x.example\", timeout: 5s}}\n", 14, "sensors.s.evaluator.http.timeout", "the sensor's own timeout"},
		{"http token_url", "  s:\n    assets: [raw.events]\n    evaluator: {http: {url: \"https://x.example\", token_url: \"https://auth.example/t\"}}\n", 14, "sensors.s.evaluator.http.token_url", "headers"},
	}
	runProblemCases(t, tests, sensorWS)
}
