package catalog

import (
	"strings"
	"testing"
	"time"
)

// scheduleWS is a workspace with an hourly, a daily and a static asset
// (lines 1-10) and the schedules section given (its first line is 11).
func scheduleWS(schedules string) string {
	return "assets:\n" +
		"  raw.events:\n    partitions: {hourly: {start: \"2026-01-01-00:00\"}}\n" + demoExec +
		"  daily.report:\n    partitions: {daily: {start: 2026-01-01}}\n" + demoExec +
		"  ref.regions:\n    partitions: {static: [eu, us]}\n" + demoExec +
		"schedules:\n" + schedules
}

func TestParseSchedules(t *testing.T) {
	src := scheduleWS(`  hourly_events:
    cron: "5 * * * *"
    assets: [raw.events]
  weekly_regions:
    cron: "0 6 * * MON"
    timezone: Europe/Berlin
    assets: raw.events
    missing_within: 7d
    chunk_size: 24
    max_concurrent_runs: 4
    priority: 10
    overlap: queue
    catchup: {window: 48h, max_ticks: 3}
    enabled: false
  regions:
    cron: "@daily"
    assets: [ref.regions]
`)
	w, err := ParseWorkspace("workspace.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Schedules) != 3 {
		t.Fatalf("%d schedules, want 3", len(w.Schedules))
	}
	h := w.Schedule("hourly_events")
	if h == nil || h.Target != TargetClosedWindows || h.Overlap != OverlapSkip || h.Catchup != DefaultCatchup || !h.Enabled || h.Line != 12 || h.Cron.Location() != time.UTC {
		t.Fatalf("hourly_events = %+v, want defaults (closed windows, skip, default catch-up, enabled, line 12, UTC)", h)
	}
	wk := w.Schedule("weekly_regions")
	if wk.Target != TargetMissingWithin || wk.MissingWithin != 7*24*time.Hour || wk.ChunkSize != 24 || wk.MaxConcurrent != 4 || wk.Priority != 10 ||
		wk.Overlap != OverlapQueue || wk.Catchup != (Catchup{Window: 48 * time.Hour, MaxTicks: 3}) || wk.Enabled || wk.Cron.Location().String() != "Europe/Berlin" ||
		len(wk.Assets) != 1 || wk.Assets[0] != "raw.events" {
		t.Fatalf("weekly_regions = %+v", wk)
	}
	if r := w.Schedule("regions"); r.Target != TargetAll {
		t.Fatalf("regions target %q, want all", r.Target)
	}
	if h.Hash() == wk.Hash() || h.Hash() != w.Schedule("hourly_events").Hash() {
		t.Fatal("hashes must differ between definitions and be stable")
	}
	// A workspace without schedules has none.
	w, err = ParseWorkspace("w.yaml", []byte(strings.TrimSuffix(scheduleWS(""), "schedules:\n")))
	if err != nil || len(w.Schedules) != 0 {
		t.Fatalf("no schedules section: %v, %d schedules", err, len(w.Schedules))
	}
}

// TestScheduleProblems: each bad schedule is reported at its line and
// field with what to write instead, and the workspace is refused.
func TestScheduleProblems(t *testing.T) {
	tests := []problemCase{
		{"cron field", "  s:\n    cron: \"61 * * * *\"\n    assets: [raw.events]\n", 13, "schedules.s.cron", `the minute field "61" is not valid`},
		{"cron seconds field", "  s:\n    cron: \"*/70 * * * * *\"\n    assets: [raw.events]\n", 13, "schedules.s.cron", `the second field "*/70"`},
		{"cron fields count", "  s:\n    cron: \"* * *\"\n    assets: [raw.events]\n", 13, "schedules.s.cron", "has 3 fields"},
		{"cron never", "  s:\n    cron: \"0 0 30 2 *\"\n    assets: [raw.events]\n", 13, "schedules.s.cron", "never fires"},
		{"missing cron", "  s:\n    assets: [raw.events]\n", 12, "schedules.s.cron", "missing cron"},
		{"unknown timezone", "  s:\n    cron: \"0 * * * *\"\n    timezone: Mars/Olympus\n    assets: [raw.events]\n", 14, "schedules.s.timezone", `unknown time zone "Mars/Olympus"`},
		{"unknown asset", "  s:\n    cron: \"0 * * * *\"\n    assets: [raw.event]\n", 14, "schedules.s.assets", `unknown asset "raw.event" (did you mean "raw.events"?)`},
		{"missing assets", "  s:\n    cron: \"0 * * * *\"\n", 12, "schedules.s.assets", "missing assets"},
		{"empty assets", "  s:\n    cron: \"0 * * * *\"\n    assets: []\n", 14, "schedules.s.assets", "list of asset keys"},
		{"asset twice", "  s:\n    cron: \"0 * * * *\"\n    assets: [raw.events, raw.events]\n", 14, "schedules.s.assets", "listed twice"},
		{"mixed targets", "  s:\n    cron: \"0 * * * *\"\n    assets: [raw.events, ref.regions]\n", 14, "schedules.s.assets", "split them into two schedules"},
		{"mixed units", "  s:\n    cron: \"0 * * * *\"\n    assets: [raw.events, daily.report]\n", 14, "schedules.s.assets", "have different windows"},
		{"missing_within static", "  s:\n    cron: \"0 * * * *\"\n    assets: [ref.regions]\n    missing_within: 7d\n", 15, "schedules.s.missing_within", "needs time-partitioned assets"},
		{"missing_within zero", "  s:\n    cron: \"0 * * * *\"\n    assets: [raw.events]\n    missing_within: 0s\n", 15, "schedules.s.missing_within", "must be positive"},
		{"catchup window zero", "  s:\n    cron: \"0 * * * *\"\n    assets: [raw.events]\n    catchup: {window: 0s}\n", 15, "schedules.s.catchup.window", "must be positive"},
		{"catchup window bad", "  s:\n    cron: \"0 * * * *\"\n    assets: [raw.events]\n    catchup: {window: soon}\n", 15, "schedules.s.catchup.window", "is not a duration"},
		{"catchup max_ticks", "  s:\n    cron: \"0 * * * *\"\n    assets: [raw.events]\n    catchup: {max_ticks: -1}\n", 15, "schedules.s.catchup.max_ticks", "between 0 and 1000"},
		{"catchup unknown field", "  s:\n    cron: \"0 * * * *\"\n    assets: [raw.events]\n    catchup: {windw: 1h}\n", 15, "schedules.s.catchup.windw", `did you mean "window"`},
		{"overlap", "  s:\n    cron: \"0 * * * *\"\n    assets: [raw.events]\n    overlap: wait\n", 15, "schedules.s.overlap", "must be skip, queue or allow"},
		{"chunk_size", "  s:\n    cron: \"0 * * * *\"\n    assets: [raw.events]\n    chunk_size: 0\n", 15, "schedules.s.chunk_size", "between 1 and 100000"},
		{"max_concurrent_runs", "  s:\n    cron: \"0 * * * *\"\n    assets: [raw.events]\n    max_concurrent_runs: 20000\n", 15, "schedules.s.max_concurrent_runs", "between 1 and 10000"},
		{"enabled", "  s:\n    cron: \"0 * * * *\"\n    assets: [raw.events]\n    enabled: maybe\n", 15, "schedules.s.enabled", "expected true or false"},
		{"unknown field", "  s:\n    cron: \"0 * * * *\"\n    assets: [raw.events]\n    chunksize: 3\n", 15, "schedules.s.chunksize", `did you mean "chunk_size"`},
		{"name", "  s/1:\n    cron: \"0 * * * *\"\n    assets: [raw.events]\n", 12, "schedules.s/1", "may only use letters"},
		{"not a mapping", "  s: hourly\n", 12, "schedules.s", ""},
	}
	runProblemCases(t, tests, scheduleWS)
}
