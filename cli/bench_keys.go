package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/bench"
	"github.com/tessera-dev/tessera/jobs"
)

func newBenchKeysCmd() *cobra.Command {
	var o bench.KeysOptions
	var noPython bool
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Time backfill create and preview of a big explicit key list over HTTP against python's json.load; report the server's memory",
		Long: `Starts this binary's serve as a process of its own on a temporary database
with one hourly asset of --keys partitions, writes a backfill request listing
every key (about 20 bytes a key) to a file, then, --rounds times, times
python3's json.load of that file (interpreter start included; skipped without
python3 on PATH; when python3 on PATH is a version manager's shim, the
interpreter it runs is timed, and the shim too, apart), POST /api/v1/backfills/preview and POST /api/v1/backfills
with it. Prints one JSON line: the medians and every figure, each median's
ratio to python's, and the server's resident set before, at its peak, right
after the last request and --wait later.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := flagBetween("keys", o.Keys, 1, jobs.MaxExplicitKeys); err != nil {
				return err
			}
			if err := flagBetween("rounds", o.Rounds, 1, 100); err != nil {
				return err
			}
			if o.Wait < 0 {
				return usageErr("--wait must be 0 or more, got %s", o.Wait)
			}
			self, err := os.Executable()
			if err != nil {
				return &exitError{ExitServer, err}
			}
			o.Server = []string{self}
			if !noPython {
				o.Python = pythonInterpreter(cmd.Context())
				if p, err := exec.LookPath("python3"); err == nil && p != o.Python {
					o.PythonOnPath = p
				}
			}
			res, err := bench.Keys(cmd.Context(), o)
			if err != nil {
				return &exitError{ExitServer, err}
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Keys, "keys", 1_000_000, "keys in the explicit list (and partitions of the asset)")
	f.IntVar(&o.Rounds, "rounds", 3, "rounds of json.load, preview and create")
	f.DurationVar(&o.Wait, "wait", 30*time.Second, "how long after the last request to read the server's resident set again")
	f.BoolVar(&o.Shuffle, "shuffle", false, "list the keys in a random (fixed-seed) order rather than in key order")
	f.BoolVar(&noPython, "no-python", false, "do not time python3's json.load")
	return cmd
}

// pythonInterpreter is the interpreter python3 on PATH runs (a version
// manager's shim resolved, so that its own start is not timed), "" when
// there is none.
func pythonInterpreter(ctx context.Context) string {
	p, err := exec.LookPath("python3")
	if err != nil {
		return ""
	}
	out, err := exec.CommandContext(ctx, p, "-c", "import sys; print(sys.executable)").Output()
	if exe := strings.TrimSpace(string(out)); err == nil && exe != "" {
		return exe
	}
	return p
}
