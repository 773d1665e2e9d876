package cli_test

import (
	"os"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/cli"
)

// TestServeStreamBoundsRefused: a stream bound that is not a positive
// number, or a per-user bound above the total, is a usage error naming
// the flag or variable (the old per-session names too), before anything is
// created.
func TestServeStreamBoundsRefused(t *testing.T) {
	wantServeRefused(t, busyAddr(t), []serveRefusal{
		{nil, []string{"--max-streams", "0"}, "--max-streams must be a positive number, got 0"},
		{nil, []string{"--max-streams-per-session", "-2"}, "--max-streams-per-session must be a positive number, got -2"},
		{nil, []string{"--max-streams", "8", "--max-streams-per-session", "9"}, "--max-streams-per-session (9) is more than --max-streams (8)"},
		{[]string{"TESSERA_MAX_STREAMS=lots"}, nil, `TESSERA_MAX_STREAMS must be a positive number, got "lots"`},
		{[]string{"TESSERA_MAX_STREAMS_PER_SESSION=0"}, nil, `TESSERA_MAX_STREAMS_PER_SESSION must be a positive number, got "0"`},
		// The bound is per user; the per-session names remain as aliases.
		{nil, []string{"--max-streams-per-user", "-2"}, "--max-streams-per-user must be a positive number, got -2"},
		{nil, []string{"--max-streams", "8", "--max-streams-per-user", "9"}, "--max-streams-per-user (9) is more than --max-streams (8): one user could hold every stream"},
		{[]string{"TESSERA_MAX_STREAMS_PER_USER=0"}, nil, `TESSERA_MAX_STREAMS_PER_USER must be a positive number, got "0"`},
		// Read slots: 0 (one fewer than the cores) or more.
		{nil, []string{"--read-slots", "-1"}, "--read-slots must be 0 or more (0 = one fewer than the cores), got -1"},
		{[]string{"TESSERA_READ_SLOTS=many"}, nil, `TESSERA_READ_SLOTS must be a whole number, 0 or more (0 = one fewer than the cores), got "many"`},
		// Read priority: a nice increment, 0 to 19.
		{nil, []string{"--read-nice", "20"}, "--read-nice must be 0 to 19 (0 = the engine's priority), got 20"},
		{nil, []string{"--read-nice", "-1"}, "--read-nice must be 0 to 19 (0 = the engine's priority), got -1"},
		{[]string{"TESSERA_READ_NICE=low"}, nil, `TESSERA_READ_NICE must be a whole number, 0 to 19 (0 = the engine's priority), got "low"`},
		{[]string{"TESSERA_READ_NICE=25"}, nil, `TESSERA_READ_NICE must be a whole number, 0 to 19 (0 = the engine's priority), got "25"`},
	})
}

// TestServeAutomationRetentionRefused: a retention that is 0, negative,
// not a duration or shorter than an hour is a usage error naming the flag
// or its variable, saying what is wrong and what to give, before anything
// is created.
func TestServeAutomationRetentionRefused(t *testing.T) {
	busy := busyAddr(t)
	const how = "at least 1h: for example 90d (the default), 30d or 36h"
	dbPath := wantServeRefused(t, busy, []serveRefusal{
		{nil, []string{"--automation-retention", "0"}, `--automation-retention "0" would prune history as soon as it is written`},
		{nil, []string{"--automation-retention", "0d"}, `--automation-retention "0d" would prune history as soon as it is written`},
		{nil, []string{"--automation-retention", "-30d"}, `--automation-retention: duration "-30d" must not be negative`},
		{nil, []string{"--automation-retention", "ninety days"}, `--automation-retention: "ninety days" is not a duration`},
		{nil, []string{"--automation-retention", "90"}, `--automation-retention: duration "90" has no unit`},
		{nil, []string{"--automation-retention", "59m"}, `--automation-retention "59m" is shorter than 1h`},
		{nil, []string{"--automation-retention", "30s"}, `--automation-retention "30s" is shorter than 1h`},
		{[]string{"TESSERA_AUTOMATION_RETENTION=5m"}, nil, `TESSERA_AUTOMATION_RETENTION "5m" is shorter than 1h`},
		{[]string{"TESSERA_AUTOMATION_RETENTION=soon"}, nil, `TESSERA_AUTOMATION_RETENTION: "soon" is not a duration`},
		// The flag beats its variable: a bad flag is refused whatever the variable says.
		{[]string{"TESSERA_AUTOMATION_RETENTION=30d"}, []string{"--automation-retention", "-1h"}, `--automation-retention: duration "-1h" must not be negative`},
	}, how)
	// Good values pass the check: the start goes on to the (busy) port.
	for _, tc := range [][]string{{"--automation-retention", "36h"}, {"--automation-retention", "1h"}, {"--automation-retention", "1d12h"}} {
		code, _, errOut := run(t, append([]string{"serve", "--db", dbPath, "--addr", busy}, tc...)...)
		if code != cli.ExitServer || !strings.Contains(errOut, "another server is using this port") {
			t.Errorf("%v: exit %d %q, want the busy port refused, not the retention", tc, code, errOut)
		}
	}
	if _, err := os.Stat(dbPath); err == nil {
		t.Fatal("a refused start created the database")
	}
}
