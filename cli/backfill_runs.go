package cli

import (
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/catalog"
)

// runsPageLimit is the most runs the server sends in one page of
// GET /api/v1/runs.
const runsPageLimit = 500

// backfillRunsFlagNames are the flags of `backfill runs` by the API
// parameter a server error names.
var backfillRunsFlagNames = fieldFlags{"asset": "--asset", "state": "--state", "backfill": "--backfill", "from": "--from", "to": "--to", "limit": "--limit"}

// backfillRunsCmd lists the chunk runs of every backfill (by hand, schedule
// or sensor), newest first, filtered as the runs page filters them.
func backfillRunsCmd(o *clientOpts) *cobra.Command {
	var asset, state, backfill, from, to string
	var pages pageFlags
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List the chunk runs of every backfill, newest first (--asset, --state, --backfill, --from, --to)",
		Args:  cobra.NoArgs,
		RunE: o.withPages(&pages, backfillRunsFlagNames, func(cmd *cobra.Command, args []string, c *client) error {
			return listing[map[string]any]{path: "/api/v1/runs", field: "runs", pageMax: runsPageLimit,
				filters: map[string]*string{"asset": &asset, "state": &state, "backfill": &backfill, "from": &from, "to": &to},
				empty:   "no runs match", newestFirst: true,
				table: func(w io.Writer, rows []map[string]any) error {
					tw := newTable(w, "RUN\tSTATE\tASSET\tPARTITIONS\tRANGE\tBACKFILL\tCHUNK\tQUEUED\tDURATION")
					for _, r := range rows {
						queued, _ := r["created_at"].(string)
						dur := ""
						if ms, ok := r["duration_ms"].(float64); ok {
							dur = catalog.HumanDuration(time.Duration(ms) * time.Millisecond)
						}
						sayf(tw, "%v\t%v\t%v\t%s\t%s\t%v\t%s\t%v\t%s\n", r["id"], r["state"], r["asset"], count(r["partitions"]), keySpan(r),
							r["backfill_id"], count(r["chunk"]), tableTime(queued), dur)
					}
					return tw.Flush()
				}}.show(cmd, o, c, pages)
		}),
	}
	cmd.Flags().StringVar(&asset, "asset", "", "only runs of this asset")
	cmd.Flags().StringVar(&state, "state", "", "only runs in these states, comma-separated (queued, running, succeeded, failed, canceled)")
	cmd.Flags().StringVar(&backfill, "backfill", "", "only runs of this backfill (its id)")
	cmd.Flags().StringVar(&from, "from", "", `only runs queued at or after this time (RFC 3339, "2025-01-15 12:00" UTC, a date, or Unix milliseconds)`)
	cmd.Flags().StringVar(&to, "to", "", "only runs queued before this time (after --from)")
	addPageFlags(cmd, &pages, "runs", 50, "newest first")
	return cmd
}
