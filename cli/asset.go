package cli

import (
	"bytes"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/handlers"
)

func newAssetCmd() *cobra.Command {
	var o clientOpts
	cmd := &cobra.Command{Use: "asset", Short: "List assets and their partitions on a Tessera server"}
	addClientFlags(cmd, &o)
	cmd.AddCommand(newAssetListCmd(&o), newAssetPartitionsCmd(&o))
	return cmd
}

// newAssetListCmd is `asset list`; o holds the parent's client flags.
func newAssetListCmd(o *clientOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "Every asset with its partition counts",
		Args:  cobra.NoArgs,
		RunE: o.withClient(nil, func(cmd *cobra.Command, args []string, c *client) error {
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
			// The words and counts of the health bars (catalog.Health): each
			// partition once; fresh and stale have data, failed and missing none.
			tw := newTable(cmd.OutOrStdout(), "ASSET\tPARTITIONS\tCODE\tTOTAL\tFRESH\tSTALE\tFAILED\tIN PROGRESS\tMISSING")
			var lastFailed int64
			for _, a := range out.Assets {
				sayf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Key, a.Partitions, a.CodeVersion, num(a.Total),
					num(a.Counts["fresh"]), num(a.Counts["stale"]), num(a.Counts["failed"]), num(a.Counts["in_progress"]), num(a.Counts["missing"]))
				lastFailed += a.Counts["last_attempt_failed"]
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			_, err := sayln(cmd.OutOrStdout(), "Fresh and stale partitions have data (stale: out of date); failed and missing have none (failed: the last attempt failed).")
			if err == nil && lastFailed > 0 {
				their := "their"
				if lastFailed == 1 {
					their = "its"
				}
				_, err = sayf(cmd.OutOrStdout(), "%s kept %s data although %s last attempt failed (counted as fresh or stale).\n", nOf(lastFailed, "partition"), their, their)
			}
			return err
		}),
	}
}

// newAssetPartitionsCmd is `asset partitions KEY`; o holds the parent's
// client flags.
func newAssetPartitionsCmd(o *clientOpts) *cobra.Command {
	var status string
	var limit int
	partitions := &cobra.Command{
		Use:   "partitions KEY",
		Short: "An asset's partitions in order (--status failed,missing to filter)",
		Args:  cobra.ExactArgs(1),
		RunE: o.withClient(assetPartitionsFlagNames, func(cmd *cobra.Command, args []string, c *client) error {
			if limit < 1 {
				return usageErr("--limit must be 1 or more, got %d", limit)
			}
			q := url.Values{}
			if status != "" {
				q.Set("status", status)
			}
			rows, raw, cursor, err := fetchPages[handlers.PartitionJSON](cmd.Context(), c, "/api/v1/assets/"+url.PathEscape(args[0])+"/partitions", q, "partitions", pageFlags{limit: limit}, 1000)
			if err != nil {
				return err
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), map[string]any{"asset": args[0], "partitions": raw, "next_cursor": cursor})
			}
			if len(rows) == 0 {
				// Not a header alone: say why nothing is listed.
				if status != "" {
					sayf(cmd.OutOrStdout(), "no partitions of %s match --status %s\n", args[0], status)
				} else {
					sayf(cmd.OutOrStdout(), "%s has no partitions yet\n", args[0])
				}
				return nil
			}
			return writePartitionsTable(cmd.OutOrStdout(), rows, cursor)
		}),
	}
	partitions.Flags().StringVar(&status, "status", "", "only partitions whose last attempt is one of these, comma-separated: materialized, failed, in_progress, missing (the STATUS column is the partition's health: fresh, stale, failed, in_progress or missing)")
	partitions.Flags().IntVar(&limit, "limit", 100, "most partitions to show, in partition order")
	return partitions
}

// writePartitionsTable writes the partitions table of `asset partitions`,
// then notes on errors cut short and on partitions left out (cursor set).
func writePartitionsTable(w io.Writer, rows []handlers.PartitionJSON, cursor string) error {
	// Each row tells the partition's last attempt (for a materialized
	// partition, the materialization): when, in which run, the code
	// version of its data and, when it failed, the error. A partition
	// whose data is older than its last attempt (it failed since) also
	// gets the time of that data, in a column shown only then.
	olderData := func(p handlers.PartitionJSON) *handlers.OutcomeJSON {
		m, a := p.LastMaterialization, p.LastAttempt
		if m == nil || a == nil || a.InstanceID == m.InstanceID {
			return nil
		}
		return m
	}
	showOlder := false
	for _, p := range rows {
		showOlder = showOlder || olderData(p) != nil
	}
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	if showOlder {
		sayf(tw, "PARTITION\tSTATUS\tLAST ATTEMPT (UTC)\tRUN\tMATERIALIZED (UTC)\tCODE\tERROR\n")
	} else {
		sayf(tw, "PARTITION\tSTATUS\tLAST ATTEMPT (UTC)\tRUN\tCODE\tERROR\n")
	}
	cut := false
	for _, p := range rows {
		at, run, code, errText := "-", "-", "-", ""
		last := p.LastAttempt
		if last == nil {
			last = p.LastMaterialization
		}
		if last != nil {
			at, run = tableTime(last.At), orDash(last.RunID)
			if last.Status == "failed" {
				var c bool
				errText, c = shortError(last.Error, partitionErrorWidth)
				cut = cut || c
			}
		}
		if m := p.LastMaterialization; m != nil {
			code = orDash(m.CodeVersion)
		}
		// The word the health bars count it under (fresh, stale, failed, in
		// progress, missing); data still there after a failed attempt says so.
		status := p.Health
		if status == "" {
			status = p.Status // a server from before health
		}
		if p.LastAttemptFailed {
			status += ", last attempt failed"
		}
		if showOlder {
			older := "-"
			if m := olderData(p); m != nil {
				older = tableTime(m.At)
			}
			sayf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Partition, status, at, run, older, code, errText)
		} else {
			sayf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Partition, status, at, run, code, errText)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, l := range strings.Split(strings.TrimSuffix(table.String(), "\n"), "\n") {
		sayln(w, strings.TrimRight(l, " ")) // no padding after the last cell that has text
	}
	if cut {
		sayf(w, "(errors cut at %d characters; --json has them whole)\n", partitionErrorWidth)
	}
	if cursor != "" {
		sayf(w, "(the first %d partitions; later ones left out: --limit N shows more)\n", len(rows))
	}
	return nil
}

// partitionErrorWidth is how much of an error a partitions table shows.
const partitionErrorWidth = 60

// shortError is err on one line, cut to width characters (with "…"), and
// whether it was cut.
func shortError(err string, width int) (string, bool) {
	s := strings.Join(strings.Fields(err), " ")
	if r := []rune(s); len(r) > width {
		return string(r[:width-1]) + "…", true
	}
	return s, false
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
