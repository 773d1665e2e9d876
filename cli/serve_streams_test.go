package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/cli"
)

// TestServeStreamBoundsRefused: a stream bound that is not a positive
// number, or a per-user bound above the total, is a usage error naming
// the flag or variable (the old per-session names too), before anything is
// created.
func TestServeStreamBoundsRefused(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "streams.db")
	busy := busyAddr(t)
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--max-streams", "0"}, "--max-streams must be a positive number, got 0"},
		{nil, []string{"--max-streams-per-session", "-2"}, "--max-streams-per-session must be a positive number, got -2"},
		{nil, []string{"--max-streams", "8", "--max-streams-per-session", "9"}, "--max-streams-per-session (9) is more than --max-streams (8)"},
		{[]string{"TESSERA_MAX_STREAMS", "lots"}, nil, `TESSERA_MAX_STREAMS must be a positive number, got "lots"`},
		{[]string{"TESSERA_MAX_STREAMS_PER_SESSION", "0"}, nil, `TESSERA_MAX_STREAMS_PER_SESSION must be a positive number, got "0"`},
		// The bound is per user; the per-session names remain as aliases.
		{nil, []string{"--max-streams-per-user", "-2"}, "--max-streams-per-user must be a positive number, got -2"},
		{nil, []string{"--max-streams", "8", "--max-streams-per-user", "9"}, "--max-streams-per-user (9) is more than --max-streams (8): one user could hold every stream"},
		{[]string{"TESSERA_MAX_STREAMS_PER_USER", "0"}, nil, `TESSERA_MAX_STREAMS_PER_USER must be a positive number, got "0"`},
	} {
		if tc.env != nil {
			t.Setenv(tc.env[0], tc.env[1])
		}
		code, _, errOut := run(t, append([]string{"serve", "--db", dbPath, "--addr", busy}, tc.args...)...)
		if code != cli.ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v %v: exit %d %q, want 2 with %q", tc.env, tc.args, code, errOut, tc.want)
		}
		if tc.env != nil {
			os.Unsetenv(tc.env[0])
		}
	}
	if _, err := os.Stat(dbPath); err == nil {
		t.Fatal("a refused start created the database")
	}
}
