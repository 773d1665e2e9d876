package cli

import (
	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/jobs"
)

// backfillJSON is the part of the server's backfill the CLI prints.
type backfillJSON struct {
	ID                 string           `json:"id"`
	Title              string           `json:"title"`
	State              string           `json:"state"`
	StateVersion       int64            `json:"state_version"`
	Assets             []string         `json:"assets"`
	Selection          string           `json:"selection"`
	ChunkSize          int64            `json:"chunk_size"`
	MaxConcurrentRuns  int64            `json:"max_concurrent_runs"`
	TotalPartitions    int64            `json:"total_partitions"`
	TotalChunks        int64            `json:"total_chunks"`
	Counts             map[string]int64 `json:"counts"`
	Partitions         map[string]int64 `json:"partitions"`
	PausedWithFailures bool             `json:"paused_with_failures"`
	ParentBackfillID   *string          `json:"parent_backfill_id"`
	RecoveredBy        *string          `json:"recovered_by"`
	CreatedBy          string           `json:"created_by"`
	CreatedAt          string           `json:"created_at"`
	FinishedAt         *string          `json:"finished_at"`
	Waiting            *jobs.RunWait    `json:"waiting"`
}

// newBackfillCmd is `tessera backfill`: one file per subcommand
// (backfill_preview.go, backfill_create.go, backfill_list.go, ...).
func newBackfillCmd() *cobra.Command {
	var o clientOpts
	cmd := &cobra.Command{Use: "backfill", Short: "Preview, launch and steer backfills on a Tessera server"}
	addClientFlags(cmd, &o)
	cmd.AddCommand(backfillPreviewCmd(&o), backfillCreateCmd(&o), backfillListCmd(&o), backfillGetCmd(&o), backfillChunksCmd(&o), backfillRunsCmd(&o), runCmd(&o), eventsCmd(&o),
		transitionCmd(&o, "pause", "Stop planning new chunks; active runs finish (--wait until none runs)"),
		transitionCmd(&o, "resume", "Resume a paused backfill (--wait until it runs again)"),
		transitionCmd(&o, "cancel", "Cancel a backfill (--terminate kills active runs; --wait until it is CANCELED)"),
		retryFailedCmd(&o))
	return cmd
}
