package cli_test

import (
	"encoding/json"
	"regexp"
	"testing"
)

// TestCLITablesWriteTimesAlike: the CLI's tables wrote times three ways
// ("2025-01-15 12:00:05" in asset partitions, RFC 3339 "2025-01-15T12:00:05Z"
// in backfill run's attempts, "2025-01-15 12:00" in user list) and the
// API's text as sent (".123Z") elsewhere. Every command now writes
// "2025-01-15 12:00:05Z" (its zone after the seconds); --json keeps RFC 3339.
func TestCLITablesWriteTimesAlike(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	s := startServer(t)
	code, out, errOut := s.cli(t, "backfill", "create", "t.daily", "--start", "2025-01-01", "--end", "2025-01-01", "--json")
	var b struct{ ID string }
	if code != 0 || json.Unmarshal([]byte(out), &b) != nil || b.ID == "" {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := s.cli(t, "backfill", "wait", b.ID); code != 0 {
		t.Fatalf("wait: %d %q %q", code, out, errOut)
	}
	_, out, _ = s.cli(t, "backfill", "runs", "--json")
	var runs struct{ Runs []struct{ ID string } }
	if json.Unmarshal([]byte(out), &runs) != nil || len(runs.Runs) != 1 {
		t.Fatalf("runs --json: %q", out)
	}
	when := `\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ`
	for _, tc := range []struct {
		args []string
		re   string
	}{
		{[]string{"backfill", "get", b.ID}, `(?m)^created\s+(` + when + `) by ops \(token\)$`},
		{[]string{"backfill", "events", b.ID}, `(?m)^(` + when + `)\s+\S+\s+ops \(token\)\s`},
		{[]string{"backfill", "run", runs.Runs[0].ID}, `(?m)^1\s+succeeded\s+(` + when + `)\s`},
		{[]string{"backfill", "runs"}, `(?m)^` + regexp.QuoteMeta(runs.Runs[0].ID) + `\s.*\s(` + when + `)\s+\S+ \S+$`},
		{[]string{"asset", "partitions", "t.daily", "--status", "materialized"}, `(?m)^2025-01-01\s+fresh\s+(` + when + `)\s`},
	} {
		code, out, errOut := s.cli(t, tc.args...)
		if code != 0 || !regexp.MustCompile(tc.re).MatchString(out) {
			t.Errorf("%v: exit %d, no time written as 2006-01-02 15:04:05Z where %s:\n%s%s", tc.args, code, tc.re, out, errOut)
		}
		if rfc := regexp.MustCompile(`\d\d\d\d-\d\d-\d\dT\d\d:\d\d`).FindString(out); rfc != "" {
			t.Errorf("%v still writes an RFC 3339 time (%s):\n%s", tc.args, rfc, out)
		}
	}
	// Local commands (against --db) write them alike too.
	for _, args := range [][]string{{"user", "list", "--db", s.DB}, {"token", "list", "--db", s.DB}} {
		code, out, errOut := run(t, args...)
		if code != 0 || !regexp.MustCompile(`(?m)^ops\s.*\s`+when+`(\s|$)`).MatchString(out) && !regexp.MustCompile(`(?m)\sops\s.*\s`+when+`\s`).MatchString(out) {
			t.Errorf("%v: exit %d, no time written as 2006-01-02 15:04:05Z:\n%s%s", args, code, out, errOut)
		}
	}
	// --json keeps the API's RFC 3339.
	if _, out, _ := s.cli(t, "backfill", "get", b.ID, "--json"); !regexp.MustCompile(`"created_at": "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"`).MatchString(out) {
		t.Errorf("backfill get --json changed its times:\n%s", out)
	}
}
