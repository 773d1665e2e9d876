package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/handlers"
)

func newGapsCmd() *cobra.Command {
	var o clientOpts
	var from string
	cmd := &cobra.Command{
		Use:   "gaps ASSET...",
		Short: "List missing partition ranges of an asset up to its watermark",
		Long: `List the missing (never materialized) partitions of ASSET as ranges with
counts, never past the asset's watermark: the last partition the live
pipeline has processed, which it records with
"tessera report ASSET --watermark KEY" (or POST /api/v1/assets/ASSET/watermark).

Without --from, only holes inside the materialized range are listed
(catch-up); with --from KEY, everything missing from KEY on. An asset without
a watermark is skipped with a warning. With several assets, each is listed
in turn (--json prints an array).`,
		Args: cobra.MinimumNArgs(1),
		RunE: o.withClient(gapsFlagNames, func(cmd *cobra.Command, args []string, c *client) error {
			var raws []json.RawMessage
			for i, asset := range args {
				path := "/api/v1/assets/" + url.PathEscape(asset) + "/gaps"
				if from != "" {
					path += "?from=" + url.QueryEscape(from)
				}
				var raw json.RawMessage
				var g handlers.Gaps
				if err := c.do(cmd.Context(), "GET", path, nil, nil, &raw); err != nil {
					return err
				}
				if err := json.Unmarshal(raw, &g); err != nil {
					return &exitError{ExitServer, fmt.Errorf("unexpected answer from the server: %v", err)}
				}
				if g.Warning != "" {
					sayln(cmd.ErrOrStderr(), "warning:", g.Warning)
				}
				if o.json {
					raws = append(raws, raw)
					continue
				}
				if i > 0 {
					sayln(cmd.OutOrStdout())
				}
				if err := printGaps(cmd.OutOrStdout(), g); err != nil {
					return err
				}
			}
			switch {
			case !o.json:
				return nil
			case len(raws) == 1:
				return printJSON(cmd.OutOrStdout(), raws[0])
			}
			return printJSON(cmd.OutOrStdout(), raws)
		}),
	}
	addClientFlags(cmd, &o)
	cmd.Flags().StringVar(&from, "from", "", "list everything missing from this partition `KEY` on (default: only holes inside the materialized range)")
	return cmd
}

// printGaps prints one asset's gap ranges as a table.
func printGaps(out io.Writer, g handlers.Gaps) error {
	if g.Skipped {
		sayf(out, "%s: skipped (no watermark)\n", g.Asset)
		return nil
	}
	scope := "holes inside the materialized range"
	if g.Mode == "from" {
		scope = "missing from " + g.From
	}
	sayf(out, "%s: %s, up to the watermark %s\n", g.Asset, scope, g.Watermark)
	if g.Note != "" {
		sayln(out, g.Note)
	}
	if len(g.Ranges) == 0 {
		sayln(out, "no gaps")
		return nil
	}
	tw := newTable(out, "START\tEND\tPARTITIONS")
	for _, r := range g.Ranges {
		sayf(tw, "%s\t%s\t%s\n", r.Start, r.End, num(r.Count))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	more := ""
	if g.Truncated {
		more = " (list truncated; narrow it with --from)"
	}
	sayf(out, "%s missing partitions in %s ranges%s\n", num(g.Total), num(int64(len(g.Ranges))), more)
	return nil
}
