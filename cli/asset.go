package cli

import (
	"encoding/json"
	"fmt"
	"net/url"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newAssetCmd() *cobra.Command {
	var o clientOpts
	cmd := &cobra.Command{Use: "asset", Short: "List assets and their partitions on a Tessera server"}
	addClientFlags(cmd, &o)
	list := &cobra.Command{
		Use:   "list",
		Short: "Every asset with its partition counts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.newClient()
			if err != nil {
				return err
			}
			var out struct {
				Assets []struct {
					Key         string           `json:"key"`
					Partitions  string           `json:"partitions"`
					CodeVersion string           `json:"code_version"`
					Total       int64            `json:"total_partitions"`
					Counts      map[string]int64 `json:"counts"`
				} `json:"assets"`
			}
			if o.json {
				var raw any
				if err := c.do(cmd.Context(), "GET", "/api/v1/assets", nil, nil, &raw); err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), raw)
			}
			if err := c.do(cmd.Context(), "GET", "/api/v1/assets", nil, nil, &out); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ASSET\tPARTITIONS\tCODE\tTOTAL\tMATERIALIZED\tFAILED\tIN PROGRESS\tMISSING")
			for _, a := range out.Assets {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\n", a.Key, a.Partitions, a.CodeVersion, a.Total,
					a.Counts["materialized"], a.Counts["failed"], a.Counts["in_progress"], a.Counts["missing"])
			}
			return tw.Flush()
		},
	}
	var status string
	var limit int
	partitions := &cobra.Command{
		Use:   "partitions KEY",
		Short: "An asset's partitions in order (--status failed,missing to filter)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.newClient()
			if err != nil {
				return err
			}
			c.withFlags(map[string]string{"status": "--status", "limit": "--limit"})
			if limit < 1 {
				return usageErr("--limit must be at least 1")
			}
			type part struct {
				Partition           string `json:"partition"`
				Status              string `json:"status"`
				LastMaterialization *struct {
					At          string `json:"at"`
					RunID       string `json:"run_id"`
					CodeVersion string `json:"code_version"`
				} `json:"last_materialization"`
			}
			var rows []part
			var raw []json.RawMessage
			cursor := ""
			for len(rows) < limit {
				q := url.Values{"limit": {fmt.Sprint(min(limit-len(rows), 1000))}}
				if status != "" {
					q.Set("status", status)
				}
				if cursor != "" {
					q.Set("cursor", cursor)
				}
				var page []part
				r, next, err := c.getPage(cmd.Context(), "/api/v1/assets/"+url.PathEscape(args[0])+"/partitions?"+q.Encode(), "partitions", &page)
				if err != nil {
					return err
				}
				raw = append(raw, r...)
				rows = append(rows, page...)
				if cursor = next; cursor == "" {
					break
				}
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), map[string]any{"asset": args[0], "partitions": raw})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PARTITION\tSTATUS\tMATERIALIZED AT\tCODE\tRUN")
			for _, p := range rows {
				at, code, run := "", "", ""
				if m := p.LastMaterialization; m != nil {
					at, code, run = m.At, m.CodeVersion, m.RunID
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Partition, p.Status, at, code, run)
			}
			return tw.Flush()
		},
	}
	partitions.Flags().StringVar(&status, "status", "", "only these statuses, comma-separated: materialized, failed, in_progress, missing")
	partitions.Flags().IntVar(&limit, "limit", 100, "most partitions to print")
	cmd.AddCommand(list, partitions)
	return cmd
}
