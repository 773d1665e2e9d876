package cli

import (
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/spf13/cobra"
)

// backfillChunksCmd lists a backfill's chunk runs in chunk order: the first
// --limit, or every one with --all.
func backfillChunksCmd(o *clientOpts) *cobra.Command {
	var chunkState string
	var pages pageFlags
	chunks := &cobra.Command{
		Use:   "chunks ID",
		Short: "List a backfill's chunk runs in chunk order (--limit N, --all)",
		Args:  cobra.ExactArgs(1),
		RunE: o.withPages(&pages, backfillChunksFlagNames, func(cmd *cobra.Command, args []string, c *client) error {
			q := url.Values{}
			if chunkState != "" {
				q.Set("state", chunkState)
			}
			rows, raw, cursor, err := fetchPages[map[string]any](cmd.Context(), c, "/api/v1/backfills/"+url.PathEscape(args[0])+"/chunks", q, "chunks", pages, chunksPageLimit)
			if err != nil {
				return err
			}
			if o.json {
				if raw == nil {
					raw = []json.RawMessage{}
				}
				return printJSON(cmd.OutOrStdout(), map[string]any{"chunks": raw, "next_cursor": cursor})
			}
			w := cmd.OutOrStdout()
			tw := newTable(w, "CHUNK\tSTATE\tASSET\tPARTITIONS\tRANGE\tATTEMPTS\tRUN")
			for _, r := range rows {
				span := fmt.Sprintf("%v … %v", r["first_key"], r["last_key"])
				if r["first_key"] == r["last_key"] {
					span = fmt.Sprint(r["first_key"])
				}
				fmt.Fprintf(tw, "%s\t%v\t%v\t%s\t%s\t%s\t%v\n", count(r["chunk"]), r["state"], r["asset"], count(r["partitions"]), span, count(r["attempts"]), r["id"])
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			pages.leftOut(w, len(rows), cursor, false)
			return nil
		}),
	}
	chunks.Flags().StringVar(&chunkState, "state", "", "only runs in these states, comma-separated (queued, running, succeeded, failed, canceled)")
	addPageFlags(chunks, &pages, "chunks", 1000, "in chunk order")
	return chunks
}
