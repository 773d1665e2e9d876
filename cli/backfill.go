package cli

import (
	"github.com/spf13/cobra"
)

// newBackfillCmd is `tessera backfill`: one file per subcommand
// (backfill_preview.go, backfill_create.go, backfill_list.go, ...).
func newBackfillCmd() *cobra.Command {
	var o clientOpts
	cmd := &cobra.Command{Use: "backfill", Short: "Preview, launch and steer backfills on a Tessera server"}
	addClientFlags(cmd, &o)
	cmd.AddCommand(backfillPreviewCmd(&o), backfillCreateCmd(&o), backfillListCmd(&o), backfillGetCmd(&o), backfillWaitCmd(&o), backfillChunksCmd(&o), backfillRunsCmd(&o), runCmd(&o), eventsCmd(&o),
		transitionCmd(&o, "pause", "Stop planning new chunks; active runs finish (--wait until none runs)"),
		transitionCmd(&o, "resume", "Resume a paused backfill (--wait until it runs again)"),
		transitionCmd(&o, "cancel", "Cancel a backfill (--terminate kills active runs; --wait until it is CANCELED)"),
		retryFailedCmd(&o))
	return cmd
}
