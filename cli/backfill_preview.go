package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func printPreview(w io.Writer, p map[string]any) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	sayf(tw, "partitions\t%s\n", count(p["total_partitions"]))
	sayf(tw, "chunks (runs)\t%s\n", count(p["total_chunks"]))
	if st, ok := p["status"].(map[string]any); ok {
		sayf(tw, "current status\t%s\n", statusLine(st))
	}
	if assets, ok := p["assets"].([]any); ok && len(assets) > 1 {
		for _, a := range assets {
			if m, ok := a.(map[string]any); ok {
				st, _ := m["status"].(map[string]any)
				sayf(tw, "  %v\t%s in %s: %s\n", m["asset"], countOf(m["partitions"], "partition"), countOf(m["chunks"], "chunk"), statusLine(st))
			}
		}
	}
	if fc, ok := p["first_chunk"].(map[string]any); ok {
		keys, _ := fc["keys"].([]any)
		total := int64(len(keys))
		if n, ok := fc["partitions"].(float64); ok && int64(n) > total {
			total = int64(n) // the server lists the first 1,000 keys of a larger chunk
		}
		sayf(tw, "first chunk\t%v: %s\n", fc["asset"], keyList(keys, 8, total))
	}
	sayf(tw, "skipped\t%s\n", count(p["skipped_count"]))
	if sk, ok := p["skipped"].([]any); ok {
		for i, s := range sk {
			if i == 5 {
				break
			}
			if m, ok := s.(map[string]any); ok {
				sayf(tw, "  %v %v\t%v\n", m["asset"], m["partition"], m["reason"])
			}
		}
	}
	sayf(tw, "estimate\t%v\n", p["estimate"])
	return tw.Flush()
}

// statusLine writes a preview's status counts as words.
func statusLine(st map[string]any) string {
	n := func(k string) int64 { f, _ := st[k].(float64); return int64(f) }
	return fmt.Sprintf("%s materialized (%s of them stale), %s failed, %s in progress, %s missing",
		num(n("materialized")), num(n("stale")), num(n("failed")), num(n("in_progress")), num(n("missing")))
}

// keyList writes up to max of the keys of a list of total (keys may be
// its first ones only), then, when it was cut, which part it shows:
// "… (first 8 of 8,760)".
func keyList(keys []any, max int, total int64) string {
	var b strings.Builder
	for i, k := range keys {
		if i == max {
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		sayf(&b, "%v", k)
	}
	if shown := int64(min(len(keys), max)); shown < total {
		sayf(&b, " … (first %s of %s)", num(shown), num(total))
	}
	return b.String()
}

// backfillPreviewCmd shows what a backfill would do, writing nothing.
func backfillPreviewCmd(o *clientOpts) *cobra.Command {
	var pf selectorFlags
	preview := &cobra.Command{
		Use:   "preview ASSET...",
		Short: "Show what a backfill would do, without creating it",
		Long: `Show what a backfill would do, without creating it (writes nothing):
partitions and chunk runs per asset, the selection's statuses, partitions
another run is building now, and an estimate of how long it will take.

` + selectorHelp + `

  tessera backfill preview analytics.daily_events --start 2025-02-01 --end 2025-02-28 --chunk-size 7
  tessera backfill preview ml.features --missing --failed --dimension region=eu`,
		RunE: func(cmd *cobra.Command, args []string) error {
			body, c, err := pf.clientRequest(cmd, args, o)
			if err != nil {
				return err
			}
			var out map[string]any
			if err := c.do(cmd.Context(), "POST", "/api/v1/backfills/preview", body, nil, &out); err != nil {
				return err
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), out)
			}
			return printPreview(cmd.OutOrStdout(), out)
		},
	}
	pf.add(preview, false)
	return preview
}
