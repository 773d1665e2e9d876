package cli

import (
	"io"
	"net/url"

	"github.com/spf13/cobra"
)

// The commands `tessera schedule` and `tessera sensor` share: list the
// workspace's schedules or sensors on a server, show one, pause and resume
// one.

// automation is a kind of the workspace's automations (schedules, sensors)
// as the CLI shows it: T is one as the server sends it.
type automation[T any] struct {
	plural string                   // "schedules": its API's path and list field
	flags  fieldFlags               // the API's fields → flags of get, pause and resume (nil: none)
	print  func(io.Writer, T) error // one as a table
}

// path is the API path of the one named name.
func (a automation[T]) path(name string) string {
	return "/api/v1/" + a.plural + "/" + url.PathEscape(name)
}

// do sends a request and prints the one it answers: as sent with --json,
// else as a table.
func (a automation[T]) do(cmd *cobra.Command, o *clientOpts, c *client, method, path string) error {
	var v T
	if printed, err := c.doOrPrint(cmd, o.json, method, path, nil, &v); printed || err != nil {
		return err
	}
	return a.print(cmd.OutOrStdout(), v)
}

// getCmd is `get NAME`.
func (a automation[T]) getCmd(o *clientOpts, short string) *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: o.withClient(a.flags, func(cmd *cobra.Command, args []string, c *client) error {
			return a.do(cmd, o, c, "GET", a.path(args[0]))
		}),
	}
}

// actionCmd is `ACTION NAME` (pause, resume): a POST that answers the one
// it changed.
func (a automation[T]) actionCmd(o *clientOpts, action, short string) *cobra.Command {
	return &cobra.Command{
		Use:   action + " NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: o.withClient(a.flags, func(cmd *cobra.Command, args []string, c *client) error {
			return a.do(cmd, o, c, "POST", a.path(args[0])+"/"+action)
		}),
	}
}

// listCmd is `list`: every one the workspace declares, a table of header
// with row a line's cells.
func (a automation[T]) listCmd(o *clientOpts, short, header string, row func(T) []any) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: o.withClient(nil, func(cmd *cobra.Command, args []string, c *client) error {
			var list map[string][]T
			if printed, err := c.doOrPrint(cmd, o.json, "GET", "/api/v1/"+a.plural, nil, &list); printed || err != nil {
				return err
			}
			if len(list[a.plural]) == 0 {
				sayln(cmd.OutOrStdout(), "the workspace declares no", singular(a.plural))
				return nil
			}
			return printTable(cmd.OutOrStdout(), header, list[a.plural], row)
		}),
	}
}
