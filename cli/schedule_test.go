package cli_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/testkit"
)

var scheduleCLIWorkspace = testkit.Assets(
	testkit.Asset("t.regions", "{static: [eu, us]}"),
) + `schedules:
  nightly:
    cron: "0 3 * * *"
    timezone: America/New_York
    assets: [t.regions]
`

// TestCLISchedule: list, get, pause, resume, trigger and ticks through
// the API of a real server, as tables and --json; refusals say what to do
// in the CLI's words and exit non-zero.
func TestCLISchedule(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	eachServer(t, scheduleCLIWorkspace, func(t *testing.T, s server) {

		code, out, errOut := s.cli(t, "schedule", "list")
		if code != 0 || !regexp.MustCompile(`(?m)^nightly\s+running\s+0 3 \* \* \*\s+America/New_York\s+\d{4}-\d\d-\d\d 03:00:00-0[45]:00\s+-\s+t\.regions$`).MatchString(out) {
			t.Fatalf("list: %d %q %q", code, out, errOut)
		}
		code, out, _ = s.cli(t, "schedule", "list", "--json")
		var list struct {
			Schedules []struct {
				Name      string           `json:"name"`
				NextTicks []map[string]any `json:"next_ticks"`
			} `json:"schedules"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Schedules) != 1 || len(list.Schedules[0].NextTicks) != 5 {
			t.Fatalf("list --json: %d %q", code, out)
		}
		code, out, errOut = s.cli(t, "schedule", "get", "nightly")
		if code != 0 || !regexp.MustCompile(`cron\s+0 3 \* \* \* \(America/New_York\)`).MatchString(out) || !strings.Contains(out, "next ticks") || strings.Count(out, " 03:00:00-0") != 5 ||
			!regexp.MustCompile(`catch-up\s+within 1d, at most 1 tick\n`).MatchString(out) {
			t.Fatalf("get: %d %q %q", code, out, errOut)
		}

		code, out, errOut = s.cli(t, "schedule", "pause", "nightly")
		if code != 0 || !regexp.MustCompile(`state\s+paused \(by ops \(token\) at `).MatchString(out) {
			t.Fatalf("pause: %d %q %q", code, out, errOut)
		}
		code, _, errOut = s.cli(t, "schedule", "pause", "nightly")
		if code == 0 || !strings.Contains(errOut, "schedule nightly is already paused; `tessera schedule resume nightly` resumes it") {
			t.Fatalf("pause again: %d %q", code, errOut)
		}

		code, out, errOut = s.cli(t, "schedule", "trigger", "nightly")
		m := regexp.MustCompile(`(?m)^backfill (bf_\w+) launched`).FindStringSubmatch(out)
		if code != 0 || m == nil || !strings.HasPrefix(out, "tick nightly:manual:") || !strings.Contains(out, ": launched\n") {
			t.Fatalf("trigger: %d %q %q", code, out, errOut)
		}
		code, out, errOut = s.cli(t, "backfill", "get", m[1])
		if code != 0 || !strings.Contains(out, "by schedule:nightly") {
			t.Fatalf("the launched backfill: %d %q %q", code, out, errOut)
		}
		code, out, errOut = s.cli(t, "schedule", "ticks", "nightly")
		if code != 0 || !regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d-0[45]:00\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\s+launched\s+`+m[1]+`\s+ops \(token\)\s+nightly:manual:`).MatchString(out) {
			t.Fatalf("ticks: %d %q %q", code, out, errOut)
		}
		code, out, _ = s.cli(t, "schedule", "ticks", "nightly", "--outcome", "skipped")
		if code != 0 || out != "no ticks match\n" {
			t.Fatalf("ticks --outcome skipped: %d %q", code, out)
		}
		code, out, _ = s.cli(t, "schedule", "ticks", "nightly", "--json", "--all")
		var ticks struct {
			Ticks      []map[string]any `json:"ticks"`
			NextCursor string           `json:"next_cursor"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &ticks) != nil || len(ticks.Ticks) != 1 || ticks.Ticks[0]["backfill_id"] != m[1] {
			t.Fatalf("ticks --json: %d %q", code, out)
		}
		code, out, errOut = s.cli(t, "schedule", "resume", "nightly")
		if code != 0 || !regexp.MustCompile(`state\s+running`).MatchString(out) {
			t.Fatalf("resume: %d %q %q", code, out, errOut)
		}
	})
}

// TestCLIScheduleBadInput: an unknown schedule names the declared ones and
// the command that lists them; an unknown outcome names --outcome; --limit
// and --all together are refused before any request.
func TestCLIScheduleBadInput(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	eachServer(t, scheduleCLIWorkspace, func(t *testing.T, s server) {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"schedule", "get", "nope"}, "unknown schedule \"nope\" (the workspace declares nightly); `tessera schedule list` lists them"},
			{[]string{"schedule", "trigger", "nope"}, "unknown schedule \"nope\" (the workspace declares nightly)"},
			{[]string{"schedule", "resume", "nightly"}, "schedule nightly is already running; nothing to do"},
			{[]string{"schedule", "ticks", "nightly", "--outcome", "exploded"}, `unknown outcome "exploded"`},
			{[]string{"schedule", "ticks", "nightly", "--limit", "5", "--all"}, "--limit and --all both say how many ticks to show; use one"},
			{[]string{"schedule", "ticks", "nightly", "--limit", "0"}, "--limit must be 1 or more"},
		} {
			code, out, errOut := s.cli(t, c.args...)
			if code == 0 || !strings.Contains(errOut, c.want) || out != "" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want %q", c.args, code, out, errOut, c.want)
			}
		}
		code, out, _ := s.cli(t, "schedule", "ticks", "nightly")
		if code != 0 || out != "no ticks match\n" {
			t.Fatalf("refusals wrote ticks: %q", out)
		}
	})
}
