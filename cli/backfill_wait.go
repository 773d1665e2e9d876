package cli

import (
	"fmt"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/handlers"
)

var terminalStates = map[string]bool{"SUCCEEDED": true, "FAILED": true, "CANCELED": true}

// waitBackfill polls until the backfill is terminal: a live progress line
// on a terminal, otherwise a plain line each time it changed (see
// plainLines). FAILED and CANCELED end with exit code 1.
func waitBackfill(cmd *cobra.Command, c *client, asJSON bool, id string) error {
	out := cmd.OutOrStdout()
	lines := newWaitLines(out)
	prog := backfillProgress{c: c, id: id}
	var b handlers.BackfillJSON
	for {
		b = handlers.BackfillJSON{}
		if err := c.do(cmd.Context(), "GET", "/api/v1/backfills/"+url.PathEscape(id), nil, nil, &b); err != nil {
			return err
		}
		final := terminalStates[b.State]
		if !asJSON {
			now := time.Now()
			if err := prog.poll(cmd.Context(), b, now); err != nil {
				return err
			}
			line, key := prog.line(b, now)
			lines.show(line, key, now, final)
		}
		if final {
			break
		}
		if err := pollPause(cmd.Context()); err != nil {
			return err
		}
	}
	if !asJSON {
		lines.end()
	}
	if asJSON {
		if err := printBackfill(cmd, true, c, id, nil); err != nil {
			return err
		}
	} else {
		sayf(out, "backfill %s %s\n", b.ID, b.State)
	}
	if b.State != "SUCCEEDED" {
		return &exitError{ExitFailed, fmt.Errorf("backfill %s ended %s: %s failed, %s upstream failed", b.ID, b.State, nOf(b.Partitions["failed"], "partition"), num(b.Partitions["upstream_failed"]))}
	}
	return nil
}

// canceledNote is ", N canceled" when N > 0.
func canceledNote(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %s canceled", num(n))
}

// backfillWaitCmd follows a backfill that is already launched (by
// `create` without --wait, a schedule, a sensor, the page) to its end, as
// `create --wait` does: exit 0 when it succeeded, 1 when it failed or was
// canceled.
func backfillWaitCmd(o *clientOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "wait ID",
		Short: "Follow a launched backfill to its end with a progress line (exit 1 if it fails or is canceled)",
		Args:  cobra.ExactArgs(1),
		RunE: o.withClient(nil, func(cmd *cobra.Command, args []string, c *client) error {
			return waitBackfill(cmd, c, o.json, args[0])
		}),
	}
}
