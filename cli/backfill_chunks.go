package cli

import (
	"io"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/handlers"
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
			return listing[map[string]any]{path: "/api/v1/backfills/" + url.PathEscape(args[0]) + "/chunks", field: "chunks", pageMax: chunksPageLimit,
				filters: map[string]*string{"state": &chunkState}, empty: chunksEmpty(chunkState),
				table: func(w io.Writer, rows []map[string]any) error {
					tw := newTable(w, "CHUNK\tSTATE\tASSET\tPARTITIONS\tRANGE\tATTEMPTS\tRUN")
					for _, r := range rows {
						sayf(tw, "%s\t%v\t%v\t%s\t%s\t%s\t%v\n", count(r["chunk"]), r["state"], r["asset"], count(r["partitions"]), keySpan(r), count(r["attempts"]), r["id"])
					}
					return tw.Flush()
				},
				after: func(w io.Writer, rows []map[string]any, cursor string) error {
					if chunkState != "" || cursor != "" {
						return nil // filtered, or cut by --limit: said so already
					}
					return unplannedChunks(cmd, c, args[0], w, len(rows))
				}}.show(cmd, o, c, pages)
		}),
	}
	chunks.Flags().StringVar(&chunkState, "state", "", "only runs in these states, comma-separated (queued, running, succeeded, failed, canceled)")
	addPageFlags(chunks, &pages, "chunks", 1000, "in chunk order")
	return chunks
}

// chunksEmpty is what `backfill chunks` says when no chunk run is listed:
// none in the --state asked for, or none planned yet.
func chunksEmpty(state string) string {
	if state != "" {
		return "no chunk runs match --state " + state
	}
	return "no chunk runs yet: a backfill's chunks get their run as it plans them"
}

// unplannedChunks notes the chunks of backfill id that have no run, when
// listed (every chunk run, unfiltered) is fewer than its chunks: the list
// has only chunk runs, while `backfill get` and the page count every chunk
// (24 runs, 18 of them canceled before they were planned).
func unplannedChunks(cmd *cobra.Command, c *client, id string, w io.Writer, listed int) error {
	var b handlers.BackfillJSON
	if err := c.do(cmd.Context(), "GET", "/api/v1/backfills/"+url.PathEscape(id), nil, nil, &b); err != nil {
		return err
	}
	n := b.TotalChunks - int64(listed)
	if n <= 0 {
		return nil
	}
	if terminalStates[b.State] {
		sayf(w, "(%s of its %s chunks never got a run: the backfill ended %s before they were planned)\n", num(n), num(b.TotalChunks), b.State)
	} else {
		sayf(w, "(%s of its %s chunks have no run yet: each gets one when the backfill plans it)\n", num(n), num(b.TotalChunks))
	}
	return nil
}
