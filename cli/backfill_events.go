package cli

import (
	"io"
	"net/url"

	"github.com/spf13/cobra"
)

// eventsPageLimit is the most events the API answers in one page.
const eventsPageLimit = 1000

// eventsCmd shows a backfill's timeline, newest first: the newest --limit
// events (following next_cursor across pages), or every one with --all,
// saying so when older events were left out.
func eventsCmd(o *clientOpts) *cobra.Command {
	var pages pageFlags
	cmd := &cobra.Command{
		Use:   "events ID",
		Short: "Show a backfill's event timeline, newest first (--limit N, --all)",
		Args:  cobra.ExactArgs(1),
		RunE: o.withPages(&pages, nil, func(cmd *cobra.Command, args []string, c *client) error {
			type event struct {
				ID                                int64
				Type, Subject, Actor, At, Summary string
			}
			return listing[event]{path: "/api/v1/backfills/" + url.PathEscape(args[0]) + "/events", field: "events", pageMax: eventsPageLimit,
				newestFirst: true,
				table: func(w io.Writer, rows []event) error {
					tw := newTable(w, "AT\tEVENT\tACTOR\tWHAT")
					for _, e := range rows {
						sayf(tw, "%s\t%s\t%s\t%s\n", tableTime(e.At), e.Type, e.Actor, e.Summary)
					}
					return tw.Flush()
				}}.show(cmd, o, c, pages)
		}),
	}
	addPageFlags(cmd, &pages, "events", 100, "newest first")
	return cmd
}
