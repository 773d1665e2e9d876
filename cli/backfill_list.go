package cli

import (
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/handlers"
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
			return listing[handlers.BackfillJSON]{path: "/api/v1/backfills", field: "backfills", pageMax: backfillsPageLimit,
				filters: map[string]*string{"state": &state, "asset": &asset}, empty: "no backfills match", newestFirst: true,
				table: func(w io.Writer, rows []handlers.BackfillJSON) error {
					tw := newTable(w, "ID\tSTATE\tPROGRESS\tPARTITIONS\tASSETS\tTITLE\tCREATED BY")
					for _, b := range rows {
						done := b.Partitions["materialized"] + b.Partitions["failed"] + b.Partitions["upstream_failed"]
						sayf(tw, "%s\t%s\t%s\t%s/%s\t%s\t%s\t%s\n", b.ID, stateLabel(b), pct(done, b.TotalPartitions), num(done), num(b.TotalPartitions),
							strings.Join(b.Assets, ","), b.Title, b.CreatedBy)
					}
					return tw.Flush()
				}}.show(cmd, o, c, pages)
		}),
	}
	list.Flags().StringVar(&state, "state", "", "only these states, comma-separated (PENDING, RUNNING, PAUSED, CANCELING, CANCELED, SUCCEEDED, FAILED)")
	list.Flags().StringVar(&asset, "asset", "", "only backfills that select this asset")
	addPageFlags(list, &pages, "backfills", 50, "newest first")
	return list
}
