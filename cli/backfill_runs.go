package cli

import (
	"encoding/json"
	"fmt"
	"net/url"
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
			q := url.Values{}
			for k, v := range map[string]string{"asset": asset, "state": state, "backfill": backfill, "from": from, "to": to} {
				if v != "" {
					q.Set(k, v)
				}
			}
			rows, raw, cursor, err := fetchPages[map[string]any](cmd.Context(), c, "/api/v1/runs", q, "runs", pages, runsPageLimit)
			if err != nil {
				return err
			}
			if o.json {
				if raw == nil {
					raw = []json.RawMessage{}
				}
				return printJSON(cmd.OutOrStdout(), map[string]any{"runs": raw, "next_cursor": cursor})
			}
			w := cmd.OutOrStdout()
			if len(rows) == 0 {
				fmt.Fprintln(w, "no runs match")
				return nil
			}
			tw := newTable(w, "RUN\tSTATE\tASSET\tPARTITIONS\tRANGE\tBACKFILL\tCHUNK\tQUEUED\tDURATION")
			for _, r := range rows {
				span := fmt.Sprintf("%v … %v", r["first_key"], r["last_key"])
				if r["first_key"] == r["last_key"] {
					span = fmt.Sprint(r["first_key"])
				}
				dur := ""
				if ms, ok := r["duration_ms"].(float64); ok {
					dur = catalog.HumanDuration(time.Duration(ms) * time.Millisecond)
				}
				fmt.Fprintf(tw, "%v\t%v\t%v\t%s\t%s\t%v\t%s\t%v\t%s\n", r["id"], r["state"], r["asset"], count(r["partitions"]), span,
					r["backfill_id"], count(r["chunk"]), r["created_at"], dur)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			pages.leftOut(w, len(rows), cursor, true)
			return nil
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
