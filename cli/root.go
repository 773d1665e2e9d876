package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tessera-dev/tessera/catalog"
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

// flagBetween refuses the value v of --flag outside [lo, hi] as a usage
// error saying the bounds and what was given; nil inside.
func flagBetween[T int | int64](flag string, v, lo, hi T) error {
	if v < lo || v > hi {
		return usageErr("--%s must be between %d and %d, got %d", flag, lo, hi, v)
	}
	return nil
}

// Execute runs the command line and returns the process exit code.
func Execute(args []string, stdout, stderr io.Writer) int {
	root := NewRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(stderr, "error:", errorText(err))
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
		newBackfillCmd(), newScheduleCmd(), newSensorCmd(), newAssetCmd(), newLoginCmd(), newTaintCmd(), newReportCmd(), newStatusCmd(), newGapsCmd())
	root.SetHelpCommand(newHelpCmd())
	root.InitDefaultCompletionCmd() // now, so that it is checked below too
	rejectUnknownSubcommands(root)
	explainArgErrors(root)
	return root
}

// explainArgErrors makes a wrong number of arguments to any command that is
// not a group a usage error that shows the command's usage line and where
// to read more, instead of cobra's bare "accepts 2 arg(s), received 1".
func explainArgErrors(cmd *cobra.Command) {
	if check := cmd.Args; check != nil && cmd.Annotations[groupAnnotation] == "" {
		cmd.Args = func(c *cobra.Command, args []string) error {
			err := check(c, args)
			if err == nil {
				return nil
			}
			msg := err.Error()
			if strings.HasPrefix(msg, "unknown command ") && !c.HasSubCommands() && len(args) > 0 {
				msg = fmt.Sprintf("%s takes no arguments, got %q", c.CommandPath(), args[0])
				if fix := boolValueAfterSpace(c, args[0]); fix != "" {
					msg += fmt.Sprintf(`; an on/off flag takes its value after "=": %s`, fix)
				}
			}
			return usageErr("%s; usage: %s (see %q)", msg, c.UseLine(), c.CommandPath()+" --help")
		}
	}
	for _, sub := range cmd.Commands() {
		explainArgErrors(sub)
	}
}

// boolValueAfterSpace is how to write arg, an argument that reads as
// on/off, as the value of the on/off flags given to c (`--trust-proxy yes`
// → "--trust-proxy=yes"): after a space it is an argument, and the flag
// alone means true. "" when arg is no such value or no such flag is given.
func boolValueAfterSpace(c *cobra.Command, arg string) string {
	var fixes []string
	c.Flags().Visit(func(f *pflag.Flag) {
		if f.Value.Type() != "bool" {
			return
		}
		// serve's flags take yes/no and on/off too; the others what
		// strconv.ParseBool takes.
		_, err := strconv.ParseBool(arg)
		if _, env := f.Value.(*envBoolValue); env {
			_, err = parseBool(arg)
		}
		if err == nil {
			fixes = append(fixes, "--"+f.Name+"="+arg)
		}
	})
	return strings.Join(fixes, " or ")
}

// explainFlagError words pflag's errors in the user's terms, from pflag's
// typed errors (the flag, the value, the parse error), and says where to
// read the command's flags: `--chunk-size x` reads `--chunk-size "x" is
// not a whole number`, and an unknown flag names the nearest known one.
func explainFlagError(c *cobra.Command, err error) error {
	msg := err.Error()
	var bad *pflag.InvalidValueError
	var unknown *pflag.NotExistError
	switch {
	case errors.As(err, &bad):
		msg = fmt.Sprintf("--%s %q %s", bad.GetFlag().Name, bad.GetValue(), whyInvalid(bad))
	case errors.As(err, &unknown) && unknown.GetSpecifiedShortnames() == "":
		if near := nearestFlag(c, unknown.GetSpecifiedName()); near != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", near)
		}
	}
	return usageErr("%s; see %q", msg, c.CommandPath()+" --help")
}

// whyInvalid says why a flag's value was refused, by the flag's type and
// the parse error's kind.
func whyInvalid(bad *pflag.InvalidValueError) string {
	var num *strconv.NumError
	if errors.As(bad, &num) && errors.Is(num.Err, strconv.ErrRange) {
		return "is out of range"
	}
	switch t := bad.GetFlag().Value.Type(); {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "is not a whole number"
	case strings.HasPrefix(t, "float"):
		return "is not a number"
	case t == "bool":
		if _, ok := bad.GetFlag().Value.(*envBoolValue); ok {
			return "is not 1/0, true/false, yes/no or on/off"
		}
		return "is not true or false"
	case t == "duration":
		return "is not a duration such as 30s, 15m or 2h"
	}
	return "is not valid: " + errors.Unwrap(bad).Error()
}

// nearestFlag returns the name of c's flag closest to name (at most two
// edits away), or "".
func nearestFlag(c *cobra.Command, name string) string {
	best, bestD := "", 3
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if d := catalog.EditDistance(name, f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}

// newHelpCmd is `tessera help [command]`; an unknown command is a usage
// error, as it is without "help".
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := cmd.Root().Find(args)
			if err != nil {
				return usageErr("%v", err)
			}
			if len(rest) > 0 && target.HasSubCommands() {
				return unknownSubcommand(target, rest[0])
			}
			return target.Help()
		},
	}
}

// groupAnnotation marks a command that only groups subcommands.
const groupAnnotation = "tessera.group"

// rejectUnknownSubcommands makes every command that only groups subcommands
// (tessera, workspace, backfill, user, …) refuse an argument that names none
// of them, with a usage error and cobra's suggestions, instead of printing
// its help and exiting 0. Without arguments it still prints its help.
func rejectUnknownSubcommands(cmd *cobra.Command) {
	if cmd.HasSubCommands() && !cmd.Runnable() {
		if cmd.Annotations == nil {
			cmd.Annotations = map[string]string{}
		}
		cmd.Annotations[groupAnnotation] = "true"
		cmd.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownSubcommand(cmd, args[0])
			}
			return nil
		}
		cmd.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
		// A mistyped subcommand followed by its flags fails flag parsing on
		// the group first ("unknown flag: --missing"): name the command
		// instead. Subcommands inherit this function, so it checks that the
		// failing command is the group itself.
		cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
			if c.Annotations[groupAnnotation] != "" {
				if args := c.Flags().Args(); len(args) > 0 {
					return unknownSubcommand(c, args[0])
				}
			}
			return explainFlagError(c, err)
		})
	}
	for _, sub := range cmd.Commands() {
		rejectUnknownSubcommands(sub)
	}
}

// unknownSubcommand is the usage error for `tessera GROUP NAME` when GROUP
// has no subcommand NAME, suggesting the nearest ones.
func unknownSubcommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if sugg := cmd.SuggestionsFor(name); len(sugg) > 0 {
		quoted := make([]string, len(sugg))
		for i, s := range sugg {
			quoted[i] = strconv.Quote(s)
		}
		return usageErr("%s; did you mean %s?", msg, strings.Join(quoted, " or "))
	}
	if cmd.HasParent() {
		var names []string
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		msg += "; its commands are " + strings.Join(names, ", ")
	}
	return usageErr("%s (see %q)", msg, cmd.CommandPath()+" --help")
}

// newLogger builds the server's logger from TESSERA_LOG_FORMAT (json, the
// default, or text) and TESSERA_LOG_LEVEL (debug, info, the default, warn or
// error); any other value is a usage error naming the variable, like every
// other setting.
func newLogger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	switch v := strings.ToLower(os.Getenv("TESSERA_LOG_LEVEL")); v {
	case "", "info":
		level = slog.LevelInfo
	case "debug":
		level = slog.LevelDebug
	case "warn", "warning":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		return nil, usageErr("TESSERA_LOG_LEVEL=%q: use debug, info, warn or error", os.Getenv("TESSERA_LOG_LEVEL"))
	}
	opts := &slog.HandlerOptions{Level: level}
	switch v := strings.ToLower(os.Getenv("TESSERA_LOG_FORMAT")); v {
	case "", "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	default:
		return nil, usageErr("TESSERA_LOG_FORMAT=%q: use json or text", os.Getenv("TESSERA_LOG_FORMAT"))
	}
}

// envOr returns the environment variable's value or def.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
