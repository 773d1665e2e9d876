package cli

import (
	"fmt"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/handlers"
)

func stateLabel(b handlers.BackfillJSON) string {
	if b.PausedWithFailures {
		return "PAUSED (with failures)"
	}
	if b.RecoveredBy != nil {
		return b.State + " (recovered by retry " + *b.RecoveredBy + ")"
	}
	return b.State
}

func pct(done, total int64) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%d%%", done*100/total)
}

// printBackfill prints b (fetching it when nil) as a table or exact JSON.
func printBackfill(cmd *cobra.Command, asJSON bool, c *client, id string, b *handlers.BackfillJSON) error {
	if asJSON || b == nil {
		b = &handlers.BackfillJSON{}
		if printed, err := c.doOrPrint(cmd, asJSON, "GET", "/api/v1/backfills/"+url.PathEscape(id), nil, b); printed || err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	sayf(tw, "id\t%s\n", b.ID)
	if b.Title != "" {
		sayf(tw, "title\t%s\n", b.Title)
	}
	sayf(tw, "state\t%s (version %d)\n", stateLabel(*b), b.StateVersion)
	sayf(tw, "assets\t%s\n", strings.Join(b.Assets, ", "))
	sayf(tw, "selection\t%s, chunks of %s, at most %s at once\n", b.Selection, num(b.ChunkSize), num(b.MaxConcurrentRuns))
	sayf(tw, "partitions\t%s: %s materialized, %s failed, %s upstream failed, %s pending%s\n", num(b.TotalPartitions),
		num(b.Partitions["materialized"]), num(b.Partitions["failed"]), num(b.Partitions["upstream_failed"]), num(b.Partitions["pending"]), canceledNote(b.Partitions["canceled"]))
	sayf(tw, "runs\t%s: %s succeeded, %s failed, %s running, %s queued, %s pending%s\n", num(b.TotalChunks),
		num(b.Counts["succeeded"]), num(b.Counts["failed"]), num(b.Counts["running"]), num(b.Counts["queued"]), num(b.Counts["pending"]), canceledNote(b.Counts["canceled"]))
	if b.Waiting != nil {
		sayf(tw, "waiting\t%s\n", b.Waiting.Reason)
	}
	if b.ParentBackfillID != nil {
		sayf(tw, "retry of\t%s\n", *b.ParentBackfillID)
	}
	sayf(tw, "created\t%s by %s\n", tableTime(b.CreatedAt), b.CreatedBy)
	return tw.Flush()
}

// backfillGetCmd shows one backfill.
func backfillGetCmd(o *clientOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show one backfill",
		Args:  cobra.ExactArgs(1),
		RunE: o.withClient(nil, func(cmd *cobra.Command, args []string, c *client) error {
			return printBackfill(cmd, o.json, c, args[0], nil)
		}),
	}
}
