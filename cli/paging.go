package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"

	"github.com/spf13/cobra"
)

// pageFlags are a listing command's --limit N and --all: how many rows to
// show, following the API's next_cursor across pages.
type pageFlags struct {
	limit int
	all   bool
	noun  string // "backfills", "chunks", "events"
}

// addPageFlags adds --limit (default def) and --all; order says how rows
// come ("newest first", "in chunk order").
func addPageFlags(cmd *cobra.Command, p *pageFlags, noun string, def int, order string) {
	p.noun = noun
	cmd.Flags().IntVar(&p.limit, "limit", def, fmt.Sprintf("most %s to show, %s", noun, order))
	cmd.Flags().BoolVar(&p.all, "all", false, fmt.Sprintf("show every %s (follows every page)", singular(noun)))
}

func singular(noun string) string {
	if len(noun) > 1 && noun[len(noun)-1] == 's' {
		return noun[:len(noun)-1]
	}
	return noun
}

// leftOut says, under a listing that --limit cut short (cursor set), how
// to see the rest: "(the newest 20 events; older ones left out: --limit N
// shows more, --all shows every event)", or "the first …; later ones" for
// a listing in order rather than newest first.
func (p pageFlags) leftOut(w io.Writer, shown int, cursor string, newestFirst bool) {
	if cursor == "" {
		return
	}
	which, rest := "first", "later"
	if newestFirst {
		which, rest = "newest", "older"
	}
	sayf(w, "(the %s %d %s; %s ones left out: --limit N shows more, --all shows every %s)\n", which, shown, p.noun, rest, singular(p.noun))
}

// check refuses --limit with --all, and a --limit below 1.
func (p pageFlags) check(cmd *cobra.Command) error {
	if p.all && cmd.Flags().Changed("limit") {
		return usageErr("--limit and --all both say how many %s to show; use one", p.noun)
	}
	if p.limit < 1 {
		return usageErr("--limit must be 1 or more, got %d (--all shows every %s)", p.limit, singular(p.noun))
	}
	return nil
}

// withPages is withClient for a listing command: --limit and --all are
// checked first.
func (o *clientOpts) withPages(pages *pageFlags, flags fieldFlags, run func(cmd *cobra.Command, args []string, c *client) error) func(*cobra.Command, []string) error {
	withC := o.withClient(flags, run)
	return func(cmd *cobra.Command, args []string) error {
		if err := pages.check(cmd); err != nil {
			return err
		}
		return withC(cmd, args)
	}
}

// fetchPages reads the list endpoint path (with the query q) page by page,
// pageMax rows at a time at most, until it holds p.limit rows or, with
// p.all, every one. It returns the rows decoded (for tables) and as sent
// (for --json), and the cursor where the rows it left out begin ("" when it
// has them all).
func fetchPages[T any](ctx context.Context, c *client, path string, q url.Values, field string, p pageFlags, pageMax int) (rows []T, raw []json.RawMessage, cursor string, err error) {
	if q == nil {
		q = url.Values{}
	}
	// --json prints raw: none matched is [], as the API answers, not null.
	raw = []json.RawMessage{}
	for p.all || len(rows) < p.limit {
		n := pageMax
		if !p.all {
			n = min(p.limit-len(rows), pageMax)
		}
		q.Set("limit", fmt.Sprint(n))
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page []T
		r, next, err := c.getPage(ctx, path+"?"+q.Encode(), field, &page)
		if err != nil {
			return nil, nil, "", err
		}
		raw = append(raw, r...)
		rows = append(rows, page...)
		if cursor = next; cursor == "" {
			break
		}
	}
	return rows, raw, cursor, nil
}

// listing is how a listing command shows a paged API list: GET path, its
// rows under field (pageMax a page at most), filtered by the query
// parameters of filters whose flag is set.
type listing[T any] struct {
	path    string
	field   string
	pageMax int
	filters map[string]*string // query parameter → its flag's value ("" leaves it out)
	// named are JSON keys that say what is listed ("schedule": NAME).
	named map[string]any
	// empty is the line shown when no row matches ("" shows the table's
	// header alone).
	empty       string
	newestFirst bool
	// table writes the rows.
	table func(w io.Writer, rows []T) error
	// after, when set, writes a note below the table (not with --json):
	// rows is every row listed, cursor where the rows left out begin.
	after func(w io.Writer, rows []T, cursor string) error
}

// show fetches the list as pages says (--limit, --all) and prints it: with
// --json as the API sends it (the rows, next_cursor: "" when every row is
// listed, else where the rest begin), else the table and what --limit left
// out.
func (l listing[T]) show(cmd *cobra.Command, o *clientOpts, c *client, pages pageFlags) error {
	q := url.Values{}
	for k, v := range l.filters {
		if *v != "" {
			q.Set(k, *v)
		}
	}
	rows, raw, cursor, err := fetchPages[T](cmd.Context(), c, l.path, q, l.field, pages, l.pageMax)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if o.json {
		out := map[string]any{l.field: raw, "next_cursor": cursor}
		maps.Copy(out, l.named)
		return printJSON(w, out)
	}
	if len(rows) == 0 && l.empty != "" {
		sayln(w, l.empty)
		return nil
	}
	if err := l.table(w, rows); err != nil {
		return err
	}
	pages.leftOut(w, len(rows), cursor, l.newestFirst)
	if l.after != nil {
		return l.after(w, rows, cursor)
	}
	return nil
}

// keySpan is a chunk run's partitions as "first … last" (one key when the
// run has one).
func keySpan(r map[string]any) string {
	if r["first_key"] == r["last_key"] {
		return fmt.Sprint(r["first_key"])
	}
	return fmt.Sprintf("%v … %v", r["first_key"], r["last_key"])
}
