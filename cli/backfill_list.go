package cli

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"
)

// backfillsPageLimit and chunksPageLimit are the most backfills and chunks
// the server sends in one page.
const (
	backfillsPageLimit = 500
	chunksPageLimit    = 1000
)

// backfillListCmd lists backfills, newest first: the newest --limit, or
// every one with --all, saying so when older ones were left out.
func backfillListCmd(o *clientOpts) *cobra.Command {
	var state, asset string
	var pages pageFlags
	list := &cobra.Command{
		Use:   "list",
		Short: "List backfills, newest first",
		Args:  cobra.NoArgs,
		RunE: o.withPages(&pages, backfillListFlagNames, func(cmd *cobra.Command, args []string, c *client) error {
			q := url.Values{}
			if state != "" {
				q.Set("state", state)
			}
			if asset != "" {
				q.Set("asset", asset)
			}
			rows, raw, cursor, err := fetchPages[backfillJSON](cmd.Context(), c, "/api/v1/backfills", q, "backfills", pages, backfillsPageLimit)
			if err != nil {
				return err
			}
			if o.json {
				// next_cursor, as the API sends it: "" when every match is
				// listed, else where the older ones begin.
				return printJSON(cmd.OutOrStdout(), map[string]any{"backfills": raw, "next_cursor": cursor})
			}
			if len(rows) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no backfills match")
				return nil
			}
			tw := newTable(cmd.OutOrStdout(), "ID\tSTATE\tPROGRESS\tPARTITIONS\tASSETS\tTITLE\tCREATED BY")
			for _, b := range rows {
				done := b.Partitions["materialized"] + b.Partitions["failed"] + b.Partitions["upstream_failed"]
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s/%s\t%s\t%s\t%s\n", b.ID, stateLabel(b), pct(done, b.TotalPartitions), num(done), num(b.TotalPartitions),
					strings.Join(b.Assets, ","), b.Title, b.CreatedBy)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			pages.leftOut(cmd.OutOrStdout(), len(rows), cursor, true)
			return nil
		}),
	}
	list.Flags().StringVar(&state, "state", "", "only these states, comma-separated (PENDING, RUNNING, PAUSED, CANCELING, CANCELED, SUCCEEDED, FAILED)")
	list.Flags().StringVar(&asset, "asset", "", "only backfills that select this asset")
	addPageFlags(list, &pages, "backfills", 50, "newest first")
	return list
}
