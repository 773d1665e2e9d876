package catalog

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDefaultWorkspace(t *testing.T) {
	w := DefaultWorkspace()
	want := []string{"raw.events", "analytics.daily_events", "analytics.monthly_revenue", "ml.features", "crm.accounts_snapshot", "partners.feeds"}
	if len(w.Assets) != len(want) {
		t.Fatalf("%d assets", len(w.Assets))
	}
	for i, k := range want {
		a := w.Assets[i]
		if a.Key != k || w.Asset(k) != a {
			t.Errorf("asset %d = %s", i, a.Key)
		}
		if a.Executor.Kind != ExecutorDemo || a.Group == "" || a.Pool == "" || a.CodeVersion == "" || a.Line == 0 {
			t.Errorf("%s: incomplete %+v", k, a)
		}
	}
	if w.Asset("nope") != nil {
		t.Error("unknown asset found")
	}
	de := w.Asset("analytics.daily_events")
	if de.CodeVersion != "v3" || de.Freshness == nil || de.Freshness.MaxLag != 26*time.Hour || de.Retries.MaxAttempts != 4 || de.Timeout != time.Hour {
		t.Errorf("daily_events = %+v", de)
	}
	if de.Scheme.Kind() != KindDaily || len(de.Deps) != 1 || de.Deps[0].Asset != "raw.events" {
		t.Errorf("daily deps = %+v", de.Deps)
	}
	if ResolveMapping(de.Deps[0].Mapping, de.Scheme, w.Asset("raw.events").Scheme) != MappingTimeWindow {
		t.Error("hourly->daily not time_window")
	}
	ml := w.Asset("ml.features")
	if ml.Scheme.Describe() != "daily × region" {
		t.Errorf("ml scheme %s", ml.Scheme.Describe())
	}
	if w.Pools["api"].Throttle == nil || *w.Pools["api"].Throttle != (Throttle{120, time.Hour}) || w.Pools["warehouse"].MaxConcurrentRuns != 4 || w.Pools["ml"].MaxConcurrentRuns != 2 {
		t.Errorf("pools = %+v", w.Pools)
	}
	mr := w.Asset("analytics.monthly_revenue")
	if mr.Freshness.DeadlineHHMM != "09:00" || mr.Freshness.Location.String() != "Europe/Berlin" || mr.Timeout != 2*time.Hour {
		t.Errorf("monthly = %+v %+v", mr, mr.Freshness)
	}
	if w.Asset("raw.events").Executor.Demo.FailureRate != 0.02 || w.Asset("raw.events").Executor.Demo.MaxDuration != 1500*time.Millisecond {
		t.Errorf("demo = %+v", w.Asset("raw.events").Executor.Demo)
	}
	order := w.TopoOrder()
	pos := map[string]int{}
	for i, a := range order {
		pos[a.Key] = i
	}
	for _, a := range w.Assets {
		for _, d := range a.Deps {
			if pos[d.Asset] > pos[a.Key] {
				t.Errorf("topo order: %s after %s", d.Asset, a.Key)
			}
		}
	}
	if got := w.Dependents("analytics.daily_events"); len(got) != 2 {
		t.Errorf("dependents = %d", len(got))
	}
}

const validWS = `pools:
  warehouse: {max_concurrent_runs: 4, throttle: 120/h}
defaults:
  retries: {max_attempts: 3, backoff: 30s}
  timeout: 1h
assets:
  raw.events:
    group: ingestion
    partitions: {hourly: {start: "2025-01-01-00:00", timezone: UTC}}
    code_version: v1
    pool: warehouse
    executor: {command: [python3, pipelines/load_events.py], env: {A: b}}
  analytics.daily_events:
    partitions: {daily: {start: 2025-01-01, timezone: Europe/Berlin}}
    deps: [{asset: raw.events}]
    freshness: {max_lag: 26h}
    executor: {http: {url: "https://etl.example/materialize", timeout: 30m}}
`

func TestParseValidExample(t *testing.T) {
	w, err := ParseWorkspace("workspace.yaml", []byte(validWS))
	if err != nil {
		t.Fatal(err)
	}
	r := w.Asset("raw.events")
	if r.Executor.Kind != ExecutorCommand || len(r.Executor.Command) != 2 || r.Executor.Env["A"] != "b" || r.Retries.Backoff != 30*time.Second {
		t.Errorf("raw.events = %+v", r)
	}
	d := w.Asset("analytics.daily_events")
	if d.Executor.HTTP == nil || d.Executor.HTTP.Timeout != 30*time.Minute || d.Group != DefaultGroup || d.Line != 13 {
		t.Errorf("daily = %+v", d)
	}
}

func problems(t *testing.T, src string) []Problem {
	t.Helper()
	_, err := ParseWorkspace("workspace.yaml", []byte(src))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want *ValidationError, got %v", err)
	}
	return ve.Problems
}

// wantOneProblem checks that src has exactly one problem, at field, whose
// message contains msg.
func wantOneProblem(t *testing.T, src, field, msg string) {
	t.Helper()
	ps := problems(t, src)
	if len(ps) != 1 || ps[0].Field != field || !strings.Contains(ps[0].Message, msg) {
		t.Errorf("want one problem at %s with %q, got:\n%s", field, msg, (&ValidationError{ps}).Error())
	}
}

// asset wraps one asset body (indented by 4) in a minimal workspace; the
// asset's first body line is line 5.
func asset(body string) string {
	return "pools:\n  warehouse: 2\nassets:\n  a.b:\n" + body
}

const demoExec = "    executor: {demo: {duration: 1s}}\n"

// problemCase is a workspace (src) and the problem it must report: at
// line, on field, with msg in its message.
type problemCase struct {
	name, src  string
	line       int
	field, msg string
}

// runProblemCases parses each case's src (through wrap, when not nil) and
// fails when the problem it must report is not among those reported.
func runProblemCases(t *testing.T, cases []problemCase, wrap func(string) string) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.src
			if wrap != nil {
				src = wrap(src)
			}
			ps := problems(t, src)
			for _, p := range ps {
				if p.Line == tc.line && p.Field == tc.field && strings.Contains(p.Message, tc.msg) {
					if p.File != "workspace.yaml" {
						t.Errorf("file = %q", p.File)
					}
					return
				}
			}
			t.Errorf("no problem at line %d field %q containing %q; got:\n%s", tc.line, tc.field, tc.msg, (&ValidationError{ps}).Error())
		})
	}
}

func TestWorkspaceProblems(t *testing.T) {
	tests := []problemCase{
		{"unknown top-level", "asets: {}\n" + asset("    partitions: {static: [a]}\n"+demoExec), 1, "asets", `did you mean "assets"`},
		{"unknown asset field", asset("    partitions: {static: [a]}\n    code_verison: v1\n" + demoExec), 6, "assets.a.b.code_verison", `did you mean "code_version"`},
		{"unknown scheme", asset("    partitions: {dayly: {start: 2025-01-01}}\n" + demoExec), 5, "assets.a.b.partitions.dayly", `did you mean "daily"`},
		{"two schemes", asset("    partitions: {daily: {start: 2025-01-01}, static: [a]}\n" + demoExec), 5, "assets.a.b.partitions", "more than one partition scheme"},
		{"start after end", asset("    partitions:\n      daily:\n        start: 2025-02-01\n        end: 2025-01-01\n" + demoExec), 7, "assets.a.b.partitions.daily.start", "is not before end"},
		{"bad start", asset("    partitions:\n      hourly:\n        start: 2025-13-01\n" + demoExec), 7, "assets.a.b.partitions.hourly.start", "is not a date"},
		{"bad daily start", asset("    partitions:\n      daily:\n        start: 2025-13-01\n" + demoExec), 7, "assets.a.b.partitions.daily.start", "start 2025-13-01 is not a date; use YYYY-MM-DD"},
		{"bad timezone", asset("    partitions: {daily: {start: 2025-01-01, timezone: Europe/Berlinn}}\n" + demoExec), 5, "assets.a.b.partitions.daily.timezone", "unknown timezone"},
		{"hourly dst", asset("    partitions:\n      hourly:\n        start: \"2025-01-01-00:00\"\n        timezone: Europe/Berlin\n" + demoExec), 8, "assets.a.b.partitions.hourly.timezone", "add an offset"},
		{"key format", asset("    partitions:\n      daily:\n        start: 2025-01-01\n        key_format: \"%Y-%m\"\n" + demoExec), 8, "assets.a.b.partitions.daily.key_format", "cannot round-trip"},
		{"unknown pool", asset("    partitions: {static: [a]}\n    pool: warehous\n" + demoExec), 6, "assets.a.b.pool", `unknown pool "warehous" (did you mean "warehouse"?)`},
		{"bad throttle", "pools:\n  w: {max_concurrent_runs: 1, throttle: 120/week}\n" + "assets:\n  a.b:\n    partitions: {static: [a]}\n" + demoExec, 2, "pools.w.throttle", "use runs per period like 120/h"},
		{"bad duration", asset("    partitions: {static: [a]}\n    timeout: 10 minutes\n" + demoExec), 6, "assets.a.b.timeout", "is not a duration"},
		{"duration without unit", asset("    partitions: {static: [a]}\n    timeout: 30\n" + demoExec), 6, "assets.a.b.timeout", "has no unit"},
		{"failure rate", asset("    partitions: {static: [a]}\n    executor: {demo: {failure_rate: 1.5}}\n"), 6, "assets.a.b.executor.demo.failure_rate", "outside [0, 1]"},
		{"fail_keys not a list", asset("    partitions: {static: [a]}\n    executor: {demo: {fail_keys: a}}\n"), 6, "assets.a.b.executor.demo.fail_keys", "non-empty list of partition keys"},
		{"fail_keys empty", asset("    partitions: {static: [a]}\n    executor: {demo: {fail_keys: []}}\n"), 6, "assets.a.b.executor.demo.fail_keys", "non-empty list of partition keys"},
		{"fail_attempts alone", asset("    partitions: {static: [a]}\n    executor: {demo: {fail_attempts: 2}}\n"), 6, "assets.a.b.executor.demo.fail_attempts", "needs fail_keys"},
		{"fail_attempts zero", asset("    partitions: {static: [a]}\n    executor: {demo: {fail_keys: [a], fail_attempts: 0}}\n"), 6, "assets.a.b.executor.demo.fail_attempts", "between 1 and 100, got 0"},
		{"fail_attempts word", asset("    partitions: {static: [a]}\n    executor: {demo: {fail_keys: [a], fail_attempts: two}}\n"), 6, "assets.a.b.executor.demo.fail_attempts", "not a whole number"},
		{"asset key syntax", "assets:\n  a/b:\n    partitions: {static: [a]}\n" + demoExec, 2, "assets.a/b", "may only use letters"},
		{"asset key pipe", "assets:\n  a|b:\n    partitions: {static: [a]}\n" + demoExec, 2, "assets.a|b", "no '/', '|'"},
		{"missing executor", asset("    partitions: {static: [a]}\n"), 4, "assets.a.b.executor", "missing executor"},
		{"two executors", asset("    partitions: {static: [a]}\n    executor: {demo: {}, command: [x]}\n"), 6, "assets.a.b.executor", "exactly one of"},
		{"command string", asset("    partitions: {static: [a]}\n    executor: {command: python3 job.py}\n"), 6, "assets.a.b.executor.command", "list of arguments"},
		{"http url", asset("    partitions: {static: [a]}\n    executor: {http: {url: etl.example}}\n"), 6, "assets.a.b.executor.http.url", "absolute http"},
		{"empty static", asset("    partitions: {static: []}\n" + demoExec), 5, "assets.a.b.partitions.static", "static list is empty"},
		{"duplicate static", asset("    partitions:\n      static:\n        - eu\n        - eu\n" + demoExec), 8, "assets.a.b.partitions.static", `static key "eu" is listed twice (first at line 7)`},
		{"missing partitions", asset(demoExec), 4, "assets.a.b.partitions", "missing partitions"},
		{"dependency unknown", asset("    partitions: {static: [a]}\n    deps: [{asset: a.c}]\n" + demoExec), 6, "assets.a.b.deps[0]", `unknown asset "a.c" (did you mean "a.b"?)`},
		{"self cycle", asset("    partitions: {static: [a]}\n    deps: [a.b]\n" + demoExec), 4, "assets.a.b.deps", "dependency cycle: a.b -> a.b"},
		{"mapping", asset("    partitions: {static: [a]}\n    deps: [{asset: a.b, mapping: window}]\n" + demoExec), 6, "assets.a.b.deps[0].mapping", "unknown mapping"},
		{"multi nested", asset("    partitions:\n      multi:\n        x: {multi: {}}\n        y: {static: [a]}\n" + demoExec), 7, "assets.a.b.partitions.multi.x.multi", "cannot be nested"},
		{"multi two time dims", asset("    partitions:\n      multi:\n        d: {daily: {start: 2025-01-01}}\n        h: {daily: {start: 2025-01-01}}\n" + demoExec), 8, "assets.a.b.partitions.multi.h", "at most one time dimension"},
		{"multi time not first", asset("    partitions:\n      multi:\n        r: {static: [a]}\n        d: {daily: {start: 2025-01-01}}\n" + demoExec), 8, "assets.a.b.partitions.multi.d", "must be declared first"},
		{"multi one dim", asset("    partitions:\n      multi:\n        r: {static: [a]}\n" + demoExec), 6, "assets.a.b.partitions.multi", "at least two dimensions"},
		{"freshness by", asset("    partitions: {static: [a]}\n    freshness: {by: \"9am\"}\n" + demoExec), 6, "assets.a.b.freshness.by", "HH:MM"},
		{"pool zero", "pools:\n  w: 0\nassets:\n  a.b:\n    partitions: {static: [a]}\n" + demoExec, 2, "pools.w", "at least 1"},
		{"invalid yaml", "assets:\n  a: [\n", 2, "", "invalid YAML"},
		{"empty", "", 0, "", "empty"},
		{"time_window to static", "assets:\n  s:\n    partitions: {static: [a]}\n" + demoExec + "  d:\n    partitions: {daily: {start: 2025-01-01}}\n    deps: [{asset: s, mapping: time_window}]\n" + demoExec, 7, "assets.d.deps[0]", "time_window mapping needs time partitions"},
	}
	runProblemCases(t, tests, nil)
}

// A bad timezone does not hide a bad start in the same scheme.
func TestBadTimezoneAndBadStartBothReported(t *testing.T) {
	ps := problems(t, asset("    partitions:\n      daily:\n        start: 2025-13-01\n        timezone: Mars/Olympus\n"+demoExec))
	var fields []string
	for _, p := range ps {
		fields = append(fields, p.Field)
	}
	if got := strings.Join(fields, ","); got != "assets.a.b.partitions.daily.start,assets.a.b.partitions.daily.timezone" {
		t.Errorf("problems at %s, want the timezone and the start:\n%s", got, (&ValidationError{ps}).Error())
	}
}

func TestDuplicateAssetKey(t *testing.T) {
	src := "assets:\n  a:\n    partitions: {static: [x]}\n" + demoExec + "  a:\n    partitions: {static: [y]}\n" + demoExec
	ps := problems(t, src)
	if len(ps) != 1 || ps[0].Line != 5 || ps[0].Field != "assets.a" || !strings.Contains(ps[0].Message, "declared twice (first at line 2)") {
		t.Errorf("got %v", ps)
	}
}

func TestCycle(t *testing.T) {
	src := "assets:\n" +
		"  a:\n    partitions: {static: [x]}\n    deps: [c]\n" + demoExec +
		"  b:\n    partitions: {static: [x]}\n    deps: [a]\n" + demoExec +
		"  c:\n    partitions: {static: [x]}\n    deps: [b]\n" + demoExec
	ps := problems(t, src)
	if len(ps) != 1 || !strings.Contains(ps[0].Message, "dependency cycle: a -> c -> b -> a") {
		t.Errorf("got %v", ps)
	}
}

func TestAllProblemsReported(t *testing.T) {
	src := `pools:
  warehouse: {max_concurrent_runs: 4, throttle: lots}
defaults:
  timeout: forever
assets:
  raw.events:
    partitions: {hourly: {start: "2025-01-01-00:00", timezone: Mars/Base}}
    pool: warehose
    executor: {demo: {failure_rate: -1}}
  analytics/daily:
    partitions: {daily: {start: 2025-01-01}}
    deps: [{asset: raw.event}]
    colour: blue
    executor: {command: [x]}
  crm:
    partitions: {static: [a, a]}
`
	ps := problems(t, src)
	want := []struct {
		line  int
		field string
	}{
		{2, "pools.warehouse.throttle"},
		{4, "defaults.timeout"},
		{7, "assets.raw.events.partitions.hourly.timezone"},
		{8, "assets.raw.events.pool"},
		{9, "assets.raw.events.executor.demo.failure_rate"},
		{10, "assets.analytics/daily"},
		{12, "assets.analytics/daily.deps[0]"},
		{13, "assets.analytics/daily.colour"},
		{15, "assets.crm.executor"},
		{16, "assets.crm.partitions.static"},
	}
	if len(ps) != len(want) {
		t.Errorf("got %d problems, want %d:\n%s", len(ps), len(want), (&ValidationError{ps}).Error())
	}
	for _, w := range want {
		found := false
		for _, p := range ps {
			if p.Line == w.line && p.Field == w.field {
				found = true
			}
		}
		if !found {
			t.Errorf("missing problem at line %d (%s)", w.line, w.field)
		}
	}
	msg := (&ValidationError{ps}).Error()
	if !strings.HasPrefix(msg, "workspace.yaml:2:49: pools.warehouse.throttle: ") || strings.Count(msg, "\n") != len(ps)-1 {
		t.Errorf("Error() = %s", msg)
	}
}

func TestProblemString(t *testing.T) {
	p := Problem{File: "workspace.yaml", Line: 12, Field: "assets.raw.events.partitions.hourly.start", Message: "start 2025-13-01 is not a date; use YYYY-MM-DD"}
	if p.String() != "workspace.yaml:12: assets.raw.events.partitions.hourly.start: start 2025-13-01 is not a date; use YYYY-MM-DD" {
		t.Error(p.String())
	}
	p.Column = 9
	if p.String() != "workspace.yaml:12:9: assets.raw.events.partitions.hourly.start: start 2025-13-01 is not a date; use YYYY-MM-DD" {
		t.Error(p.String())
	}
}

func TestDurationsAndThrottles(t *testing.T) {
	for s, want := range map[string]time.Duration{"30s": 30 * time.Second, "1d": 24 * time.Hour, "1d12h": 36 * time.Hour, "1.5d": 36 * time.Hour, "200ms": 200 * time.Millisecond, "0": 0} {
		if d, err := ParseDuration(s); err != nil || d != want {
			t.Errorf("ParseDuration(%q) = %v, %v", s, d, err)
		}
	}
	for _, s := range []string{"", "x", "30", "-1h", "1 d"} {
		if _, err := ParseDuration(s); err == nil {
			t.Errorf("ParseDuration(%q) accepted", s)
		}
	}
	for s, want := range map[string]Throttle{"120/h": {120, time.Hour}, "5/s": {5, time.Second}, "1/d": {1, 24 * time.Hour}, "10/30s": {10, 30 * time.Second}, "3/m": {3, time.Minute}} {
		if th, err := ParseThrottle(s); err != nil || th != want {
			t.Errorf("ParseThrottle(%q) = %v, %v", s, th, err)
		}
	}
	// Each refusal says which part is wrong, and how to write one.
	for s, want := range map[string]string{
		"":       `throttle "" has no period (no /)`,
		"120":    `throttle "120" has no period (no /)`,
		"0/h":    `"0" before the / is not a whole number of runs of at least 1`,
		"x/h":    `"x" before the / is not a whole number of runs of at least 1`,
		"-1/h":   `"-1" before the / is not a whole number of runs of at least 1`,
		"5/week": `"week" after the / is not a period`,
		"4/0s":   `"0s" after the / is not a period`,
		"4/":     `"" after the / is not a period`,
		"4/1ns":  `a period of 1ns is under a millisecond`,
	} {
		_, err := ParseThrottle(s)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasSuffix(err.Error(), "use runs per period like 120/h or 10/30s (units s, m, h, d)") {
			t.Errorf("ParseThrottle(%q): %v, want it to say %s and how to write one", s, err, want)
		}
	}
	if th, err := ParseThrottle("4/1ms"); err != nil || th != (Throttle{4, time.Millisecond}) {
		t.Errorf("ParseThrottle(4/1ms) = %v, %v: a millisecond is the finest period", th, err)
	}
	if (Throttle{120, time.Hour}).String() != "120/h" || (Throttle{120, time.Hour}).Interval() != 30*time.Second {
		t.Error("Throttle String/Interval")
	}
	lo, hi, err := parseDurationRange("200ms-2s")
	if err != nil || lo != 200*time.Millisecond || hi != 2*time.Second {
		t.Errorf("range = %v %v %v", lo, hi, err)
	}
	if _, _, err := parseDurationRange("2s-1s"); err == nil {
		t.Error("backwards range accepted")
	}
}
