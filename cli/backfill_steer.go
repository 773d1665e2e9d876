package cli

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/handlers"
)

func transitionCmd(o *clientOpts, action, short string) *cobra.Command {
	var expected int64
	var terminate, wait bool
	cmd := &cobra.Command{
		Use:   action + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: o.withClient(steerFlagNames, func(cmd *cobra.Command, args []string, c *client) error {
			body := map[string]any{}
			if cmd.Flags().Changed("expected-state-version") {
				// Sent whenever given, so that the server refuses 0 or a
				// negative number instead of the check being skipped.
				body["expected_state_version"] = expected
			}
			if terminate {
				body["terminate"] = true
			}
			var b handlers.BackfillJSON
			if err := c.do(cmd.Context(), "POST", "/api/v1/backfills/"+url.PathEscape(args[0])+"/"+action, body, nil, &b); err != nil {
				return err
			}
			if wait {
				return waitTransition(cmd, c, o.json, action, b)
			}
			return printBackfill(cmd, o.json, c, b.ID, &b)
		}),
	}
	cmd.Flags().Int64Var(&expected, "expected-state-version", 0, "refuse (409) if the backfill changed since this state_version")
	if action == "cancel" {
		cmd.Flags().BoolVar(&terminate, "terminate", false, "kill active runs instead of letting them finish")
	}
	cmd.Flags().BoolVar(&wait, "wait", false, map[string]string{
		"pause":  "wait until no run of the backfill is running any more",
		"resume": "wait until the backfill is RUNNING (or finished)",
		"cancel": "wait until the backfill is CANCELED (or finished)",
	}[action])
	return cmd
}

// transitionDone reports whether a backfill reached what `action --wait`
// waits for, and an error when it never will: pause waits until no run is
// running, resume until RUNNING, cancel until CANCELED; a backfill that
// finished ends every wait.
func transitionDone(action string, b handlers.BackfillJSON) (bool, error) {
	if terminalStates[b.State] {
		return true, nil
	}
	switch action {
	case "pause":
		if b.State != "PAUSED" {
			return false, &exitError{ExitFailed, fmt.Errorf("backfill %s is %s again while waiting for its runs to finish (someone resumed or canceled it)", b.ID, b.State)}
		}
		return b.Counts["running"] == 0, nil
	case "resume":
		if b.State == "PAUSED" {
			return false, &exitError{ExitFailed, fmt.Errorf("backfill %s was paused again while waiting for it to run", b.ID)}
		}
		return b.State == "RUNNING", nil
	case "cancel":
		return b.State == "CANCELED", nil
	}
	return true, nil
}

// waitTransition polls after pause, resume or cancel (first is the
// transition's answer) until transitionDone, like create --wait: a live line
// on a terminal, otherwise a plain line each time the counts or the state
// changed (see plainLines). A backfill that ended FAILED exits 1.
func waitTransition(cmd *cobra.Command, c *client, asJSON bool, action string, first handlers.BackfillJSON) error {
	lines := newWaitLines(cmd.OutOrStdout())
	start := time.Now()
	b := first
	for {
		ok, err := transitionDone(action, b)
		if err != nil {
			return err
		}
		if !asJSON {
			key := fmt.Sprintf("%s: %d running, %d queued", stateLabel(b), b.Counts["running"], b.Counts["queued"])
			line := fmt.Sprintf("%s, %s", key, time.Since(start).Round(100*time.Millisecond))
			lines.show(line, key, time.Now(), ok)
		}
		if ok {
			break
		}
		if err := pollPause(cmd.Context()); err != nil {
			return err
		}
		b = handlers.BackfillJSON{}
		if err := c.do(cmd.Context(), "GET", "/api/v1/backfills/"+url.PathEscape(first.ID), nil, nil, &b); err != nil {
			return err
		}
	}
	if !asJSON {
		lines.end()
	}
	if err := printBackfill(cmd, asJSON, c, b.ID, &b); err != nil {
		return err
	}
	if b.State == "FAILED" {
		return &exitError{ExitFailed, fmt.Errorf("backfill %s ended FAILED: %s failed, %s upstream failed", b.ID, nOf(b.Partitions["failed"], "partition"), num(b.Partitions["upstream_failed"]))}
	}
	return nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

func retryFailedCmd(o *clientOpts) *cobra.Command {
	var requestID string
	var expected, chunkSize, concurrency int64
	var wait bool
	cmd := &cobra.Command{
		Use:   "retry-failed ID",
		Short: "Create a child backfill of the failed and upstream-failed partitions",
		Args:  cobra.ExactArgs(1),
		RunE: o.withClient(steerFlagNames, func(cmd *cobra.Command, args []string, c *client) error {
			body := map[string]any{}
			if cmd.Flags().Changed("request-id") {
				// Sent as given, "" included: the server refuses an empty
				// id rather than take it as none.
				body["retry_request_id"] = requestID
			}
			// Sent only when given, so that the server checks any value
			// given (0 included) as it does for create, and a setting left
			// out keeps the parent's.
			f := cmd.Flags()
			if f.Changed("chunk-size") {
				body["chunk_size"] = chunkSize
			}
			if f.Changed("concurrency") {
				body["max_concurrent_runs"] = concurrency
			}
			if f.Changed("expected-state-version") {
				body["expected_state_version"] = expected
			}
			var b handlers.BackfillJSON
			if err := c.do(cmd.Context(), "POST", "/api/v1/backfills/"+url.PathEscape(args[0])+"/retry-failed", body, nil, &b); err != nil {
				return err
			}
			if wait {
				return waitBackfill(cmd, c, o.json, b.ID)
			}
			return printBackfill(cmd, o.json, c, b.ID, &b)
		}),
	}
	cmd.Flags().StringVar(&requestID, "request-id", "", "repeat-safe id: the same id returns the same child")
	cmd.Flags().Int64Var(&expected, "expected-state-version", 0, "refuse (409) if the backfill changed since this state_version")
	cmd.Flags().Int64Var(&chunkSize, "chunk-size", 0, "partitions per run of the child (default: the parent's)")
	cmd.Flags().Int64Var(&concurrency, "concurrency", 0, "most runs of the child at once (default: the parent's)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the child backfill to finish")
	return cmd
}
