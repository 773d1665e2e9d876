package cli

import (
	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/handlers"
)

// backfillCreateCmd launches a backfill (and follows it with --wait).
func backfillCreateCmd(o *clientOpts) *cobra.Command {
	var cf selectorFlags
	create := &cobra.Command{
		Use:   "create ASSET...",
		Short: "Launch a backfill (--wait to follow it to the end)",
		Long: `Launch a backfill and print it; "tessera backfill preview" with the same
flags shows first what it will do. With --wait, follow it to the end with a
progress line, and exit 1 if it fails.

` + selectorHelp + `

  tessera backfill create analytics.daily_events --start 2025-02-01 --end 2025-02-28 --chunk-size 7 --concurrency 2 --wait
  tessera backfill create ml.features --missing --failed --dimension region=eu --title "EU catch-up"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			headers, err := idempotencyHeader(cmd, cf.idempotencyKey)
			if err != nil {
				return err
			}
			body, c, err := cf.clientRequest(cmd, args, o)
			if err != nil {
				return err
			}
			var b handlers.BackfillJSON
			if err := c.do(cmd.Context(), "POST", "/api/v1/backfills", body, headers, &b); err != nil {
				return err
			}
			if cf.wait {
				return waitBackfill(cmd, c, o.json, b.ID)
			}
			return printBackfill(cmd, o.json, c, b.ID, &b)
		},
	}
	cf.add(create, true)
	return create
}
