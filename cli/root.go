// Package cli is the tessera command line: the server, workspace checks,
// benchmarks and the administrative commands, built with cobra.
package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
)

// Exit codes, documented in README.
const (
	ExitOK      = 0
	ExitFailed  = 1 // a backfill waited on ended FAILED
	ExitUsage   = 2 // bad flags, arguments or input files
	ExitServer  = 3 // the server or the database could not be reached, or refused
	ExitUnknown = 3
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{ExitUsage, fmt.Errorf(format, args...)}
}

// Execute runs the command line and returns the process exit code.
func Execute(args []string, stdout, stderr io.Writer) int {
	root := NewRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(stderr, "error:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return ExitUsage // cobra's own errors are usage errors (unknown flag, bad args)
}

// NewRoot builds the command tree.
func NewRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "tessera",
		Short:         "Tessera: partition grids, backfills and staleness for partitioned data pipelines",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newServeCmd(), newWorkspaceCmd(), newBenchCmd(), newMigrateCmd(), newUserCmd(), newTokenCmd(), newHealthcheckCmd(),
		newBackfillCmd(), newAssetCmd(), newLoginCmd(), newTaintCmd(), newReportCmd(), newStatusCmd(), newGapsCmd())
	return root
}

func newLogger(w io.Writer) *slog.Logger {
	level := slog.LevelInfo
	if os.Getenv("TESSERA_LOG_LEVEL") == "debug" {
		level = slog.LevelDebug
	}
	if os.Getenv("TESSERA_LOG_FORMAT") == "text" {
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// envOr returns the environment variable's value or def.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
