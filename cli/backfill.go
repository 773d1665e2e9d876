package cli

import (
	"bufio"
	"encoding/json"

	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/jobs"
)

// backfillJSON is the part of the server's backfill the CLI prints.
type backfillJSON struct {
	ID                 string           `json:"id"`
	Title              string           `json:"title"`
	State              string           `json:"state"`
	StateVersion       int64            `json:"state_version"`
	Assets             []string         `json:"assets"`
	Selection          string           `json:"selection"`
	ChunkSize          int64            `json:"chunk_size"`
	MaxConcurrentRuns  int64            `json:"max_concurrent_runs"`
	TotalPartitions    int64            `json:"total_partitions"`
	TotalChunks        int64            `json:"total_chunks"`
	Counts             map[string]int64 `json:"counts"`
	Partitions         map[string]int64 `json:"partitions"`
	PausedWithFailures bool             `json:"paused_with_failures"`
	ParentBackfillID   *string          `json:"parent_backfill_id"`
	CreatedBy          string           `json:"created_by"`
	CreatedAt          string           `json:"created_at"`
	FinishedAt         *string          `json:"finished_at"`
	Waiting            *jobs.RunWait    `json:"waiting"`
}

// selectorFlags are the ways to choose partitions.
type selectorFlags struct {
	start, end, partitionsFile       string
	explicitKeys                     []string // --partitions and --partition, in command-line order
	keysGiven                        bool
	missing, failed, stale, tainted  bool
	dimensions                       []dimensionArg // --dimension and --dimension-value, in order
	chunkSize, concurrency, priority int64
	title, idempotencyKey            string
	wait                             bool
}

func (s *selectorFlags) add(cmd *cobra.Command, create bool) {
	f := cmd.Flags()
	f.StringVar(&s.start, "start", "", "first partition `KEY` of a range")
	f.StringVar(&s.end, "end", "", "last partition `KEY` of a range (inclusive)")
	f.Var(&keysFlag{s, true}, "partitions", "explicit partition keys, comma-separated (repeatable)")
	f.Var(&keysFlag{s, false}, "partition", "one explicit partition key, taken as written, commas included (repeatable)")
	f.StringVar(&s.partitionsFile, "partitions-file", "", "`FILE` with one partition key per line (- for stdin)")
	f.BoolVar(&s.missing, "missing", false, "only partitions never materialized")
	f.BoolVar(&s.failed, "failed", false, "only partitions whose last attempt failed")
	f.BoolVar(&s.stale, "stale", false, "only stale partitions: materialized, but tainted, built by an older code version, older than an upstream partition they read, or past the freshness policy")
	f.BoolVar(&s.tainted, "tainted", false, "only partitions marked tainted")
	f.Var(&dimensionFlag{s, true}, "dimension", "dimension filter NAME=VALUE[,VALUE] for multi-dimensional assets (repeatable)")
	f.Var(&dimensionFlag{s, false}, "dimension-value", "dimension filter NAME=VALUE with one value taken as written, commas included (repeatable)")
	f.Int64Var(&s.chunkSize, "chunk-size", jobs.DefaultChunkSize, "partitions per run")
	f.Int64Var(&s.concurrency, "concurrency", jobs.DefaultMaxConcurrentRuns, "most runs of this backfill at once")
	if create {
		f.Int64Var(&s.priority, "priority", 0, "higher runs first")
		f.StringVar(&s.title, "title", "", "a title for the backfill")
		f.StringVar(&s.idempotencyKey, "idempotency-key", "", "repeat-safe request id: the same key returns the same backfill")
		f.BoolVar(&s.wait, "wait", false, "wait for the backfill to finish, showing progress")
	}
}

// request builds the API body from the flags, refusing conflicting selectors.
// cmdPath names the command run (tessera backfill preview or create).
func (s *selectorFlags) request(cmdPath string, assets []string) (map[string]any, error) {
	if len(assets) == 0 {
		return nil, usageErr("name at least one asset: %s ASSET... --start KEY --end KEY", cmdPath)
	}
	explicit := s.keysGiven || s.partitionsFile != ""
	ranged := s.start != "" || s.end != ""
	var statuses []string
	for name, on := range map[string]bool{"missing": s.missing, "failed": s.failed, "stale": s.stale, "tainted": s.tainted} {
		if on {
			statuses = append(statuses, name)
		}
	}
	if s.keysGiven && s.partitionsFile != "" {
		return nil, usageErr("--partition/--partitions and --partitions-file both choose keys; use one")
	}
	if explicit && (ranged || len(statuses) > 0 || len(s.dimensions) > 0) {
		return nil, usageErr("--partition/--partitions/--partitions-file cannot be combined with --start/--end, --missing/--failed/--stale/--tainted or --dimension/--dimension-value")
	}
	dims := map[string][]string{}
	for _, d := range s.dimensions {
		name, vals, ok := strings.Cut(d.arg, "=")
		switch {
		case (!ok || name == "" || vals == "") && d.split:
			return nil, usageErr("--dimension %q is not NAME=VALUE[,VALUE] (for example region=eu)", d.arg)
		case !ok || name == "" || vals == "":
			return nil, usageErr("--dimension-value %q is not NAME=VALUE (for example region=eu,north for the value \"eu,north\")", d.arg)
		case d.split:
			dims[name] = append(dims[name], strings.Split(vals, ",")...)
		default:
			dims[name] = append(dims[name], vals)
		}
	}
	var selector map[string]any
	switch {
	case explicit:
		keys, err := s.keys()
		if err != nil {
			return nil, err
		}
		selector = map[string]any{"type": "explicit", "keys": keys}
	case len(statuses) > 0 || len(dims) > 0:
		selector = map[string]any{"type": "filter", "statuses": sortedStatuses(statuses), "start": s.start, "end": s.end}
		if len(dims) > 0 {
			selector["dimensions"] = dims
		}
	case ranged:
		selector = map[string]any{"type": "range", "start": s.start, "end": s.end}
	default:
		return nil, usageErr("choose partitions: --start/--end, --partitions (or --partition, repeatable), --partitions-file, or --missing/--failed/--stale/--tainted")
	}
	return map[string]any{"assets": assets, "selector": selector, "chunk_size": s.chunkSize,
		"max_concurrent_runs": s.concurrency, "priority": s.priority, "title": s.title}, nil
}

func sortedStatuses(in []string) []string {
	var out []string
	for _, s := range []string{"missing", "failed", "stale", "tainted"} {
		for _, x := range in {
			if x == s {
				out = append(out, s)
			}
		}
	}
	return out
}

func (s *selectorFlags) keys() ([]string, error) {
	if s.keysGiven {
		return s.explicitKeys, nil
	}
	var r io.Reader = os.Stdin
	if s.partitionsFile != "-" {
		f, err := os.Open(s.partitionsFile)
		if err != nil {
			return nil, usageErr("--partitions-file: %v", err)
		}
		defer f.Close()
		r = f
	}
	var keys []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if k := strings.TrimSpace(sc.Text()); k != "" {
			keys = append(keys, k)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, usageErr("--partitions-file: %v", err)
	}
	return keys, nil
}

// selectorHelp is how preview and create choose partitions.
const selectorHelp = `Choose the partitions with one of:

  --start KEY --end KEY          a range of keys (both inclusive)
  --partitions KEY,KEY...        explicit keys (repeatable; --partition KEY takes
                                 one key as written, commas included)
  --partitions-file FILE         explicit keys, one a line (- reads standard input)
  --missing, --failed, --stale, --tainted
                                 only partitions in any of the statuses given
                                 (--missing --failed: missing or failed), within
                                 --start/--end when given, and of a multi-dimensional
                                 asset only the --dimension NAME=VALUE[,VALUE] given

An explicit list cannot be combined with a range or a status filter. A status
filter is resolved once, when the backfill is created. Several assets make one
backfill; an upstream's partitions are built before the downstream ones that
read them.`

func newBackfillCmd() *cobra.Command {
	var o clientOpts
	cmd := &cobra.Command{Use: "backfill", Short: "Preview, launch and steer backfills on a Tessera server"}
	addClientFlags(cmd, &o)

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
			body, err := pf.request(cmd.CommandPath(), args)
			if err != nil {
				return err
			}
			c, err := o.newClient()
			if err != nil {
				return err
			}
			c.withFlags(selectorFlagNames)
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
			body, err := cf.request(cmd.CommandPath(), args)
			if err != nil {
				return err
			}
			c, err := o.newClient()
			if err != nil {
				return err
			}
			c.withFlags(selectorFlagNames)
			headers := map[string]string{}
			if cf.idempotencyKey != "" {
				headers["Idempotency-Key"] = cf.idempotencyKey
			}
			var b backfillJSON
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

	var state, asset string
	var limit int
	var all bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List backfills, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all && cmd.Flags().Changed("limit") {
				return usageErr("--limit and --all both say how many backfills to show; use one")
			}
			if limit < 1 {
				return usageErr("--limit must be 1 or more, got %d (--all shows every backfill)", limit)
			}
			c, err := o.newClient()
			if err != nil {
				return err
			}
			c.withFlags(backfillListFlagNames)
			var rows []backfillJSON
			var raw []json.RawMessage
			cursor := ""
			for all || len(rows) < limit {
				n := backfillsPageLimit
				if !all {
					n = min(limit-len(rows), backfillsPageLimit)
				}
				q := url.Values{"limit": {fmt.Sprint(n)}}
				if state != "" {
					q.Set("state", state)
				}
				if asset != "" {
					q.Set("asset", asset)
				}
				if cursor != "" {
					q.Set("cursor", cursor)
				}
				var page []backfillJSON
				r, next, err := c.getPage(cmd.Context(), "/api/v1/backfills?"+q.Encode(), "backfills", &page)
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
				// next_cursor, as the API sends it: "" when every match is
				// listed, else where the older ones begin.
				return printJSON(cmd.OutOrStdout(), map[string]any{"backfills": raw, "next_cursor": cursor})
			}
			if len(rows) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no backfills match")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATE\tPROGRESS\tPARTITIONS\tASSETS\tTITLE\tCREATED BY")
			for _, b := range rows {
				done := b.Partitions["materialized"] + b.Partitions["failed"] + b.Partitions["upstream_failed"]
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", b.ID, stateLabel(b), pct(done, b.TotalPartitions), done, b.TotalPartitions,
					strings.Join(b.Assets, ","), b.Title, b.CreatedBy)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if cursor != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "(the newest %d backfills; older ones left out: --limit N shows more, --all shows every backfill)\n", len(rows))
			}
			return nil
		},
	}
	list.Flags().StringVar(&state, "state", "", "only these states, comma-separated (PENDING, RUNNING, PAUSED, CANCELING, CANCELED, SUCCEEDED, FAILED)")
	list.Flags().StringVar(&asset, "asset", "", "only backfills that select this asset")
	list.Flags().IntVar(&limit, "limit", 50, "most backfills to show, newest first")
	list.Flags().BoolVar(&all, "all", false, "show every backfill (follows every page)")

	get := &cobra.Command{
		Use:   "get ID",
		Short: "Show one backfill",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.newClient()
			if err != nil {
				return err
			}
			return printBackfill(cmd, o.json, c, args[0], nil)
		},
	}

	var chunkState string
	var chunkLimit int
	var chunkAll bool
	chunks := &cobra.Command{
		Use:   "chunks ID",
		Short: "List a backfill's chunk runs in chunk order (--limit N, --all)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if chunkAll && cmd.Flags().Changed("limit") {
				return usageErr("--limit and --all both say how many chunks to show; use one")
			}
			if chunkLimit < 1 {
				return usageErr("--limit must be 1 or more, got %d (--all shows every chunk)", chunkLimit)
			}
			c, err := o.newClient()
			if err != nil {
				return err
			}
			c.withFlags(backfillChunksFlagNames)
			var rows []map[string]any
			var raw []json.RawMessage
			cursor := ""
			for chunkAll || len(rows) < chunkLimit {
				n := chunksPageLimit
				if !chunkAll {
					n = min(chunkLimit-len(rows), chunksPageLimit)
				}
				q := url.Values{"limit": {fmt.Sprint(n)}}
				if chunkState != "" {
					q.Set("state", chunkState)
				}
				if cursor != "" {
					q.Set("cursor", cursor)
				}
				var page []map[string]any
				r, next, err := c.getPage(cmd.Context(), "/api/v1/backfills/"+url.PathEscape(args[0])+"/chunks?"+q.Encode(), "chunks", &page)
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
				if raw == nil {
					raw = []json.RawMessage{}
				}
				return printJSON(cmd.OutOrStdout(), map[string]any{"chunks": raw, "next_cursor": cursor})
			}
			w := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CHUNK\tSTATE\tASSET\tPARTITIONS\tRANGE\tATTEMPTS\tRUN")
			for _, r := range rows {
				span := fmt.Sprintf("%v … %v", r["first_key"], r["last_key"])
				if r["first_key"] == r["last_key"] {
					span = fmt.Sprint(r["first_key"])
				}
				fmt.Fprintf(tw, "%v\t%v\t%v\t%v\t%s\t%v\t%v\n", r["chunk"], r["state"], r["asset"], r["partitions"], span, r["attempts"], r["id"])
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if cursor != "" {
				fmt.Fprintf(w, "(the first %d chunks; later ones left out: --limit N shows more, --all shows every chunk)\n", len(rows))
			}
			return nil
		},
	}
	chunks.Flags().StringVar(&chunkState, "state", "", "only runs in these states, comma-separated (queued, running, succeeded, failed, canceled)")
	chunks.Flags().IntVar(&chunkLimit, "limit", 1000, "most chunks to show, in chunk order")
	chunks.Flags().BoolVar(&chunkAll, "all", false, "show every chunk (follows every page)")

	events := eventsCmd(&o)

	cmd.AddCommand(preview, create, list, get, chunks, runCmd(&o), events,
		transitionCmd(&o, "pause", "Stop planning new chunks; active runs finish (--wait until none runs)"),
		transitionCmd(&o, "resume", "Resume a paused backfill (--wait until it runs again)"),
		transitionCmd(&o, "cancel", "Cancel a backfill (--terminate kills active runs; --wait until it is CANCELED)"),
		retryFailedCmd(&o))
	return cmd
}

func transitionCmd(o *clientOpts, action, short string) *cobra.Command {
	var expected int64
	var terminate, wait bool
	cmd := &cobra.Command{
		Use:   action + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.newClient()
			if err != nil {
				return err
			}
			c.withFlags(steerFlagNames)
			body := map[string]any{}
			if cmd.Flags().Changed("expected-state-version") {
				// Sent whenever given, so that the server refuses 0 or a
				// negative number instead of the check being skipped.
				body["expected_state_version"] = expected
			}
			if terminate {
				body["terminate"] = true
			}
			var b backfillJSON
			if err := c.do(cmd.Context(), "POST", "/api/v1/backfills/"+url.PathEscape(args[0])+"/"+action, body, nil, &b); err != nil {
				return err
			}
			if wait {
				return waitTransition(cmd, c, o.json, action, b)
			}
			return printBackfill(cmd, o.json, c, b.ID, &b)
		},
	}
	cmd.Flags().Int64Var(&expected, "expected-state-version", 0, "refuse (409) if the backfill changed since this state_version")
	if action == "cancel" {
		cmd.Flags().BoolVar(&terminate, "terminate", false, "kill active runs instead of letting them finish")
	}
	cmd.Flags().BoolVar(&wait, "wait", false, map[string]string{
		"pause":  "wait until no run of the backfill is running any more",
		"resume": "wait until the backfill is RUNNING (or finished)",
		"cancel": "wait until the backfill is CANCELED (or finished)",
	}[action])
	return cmd
}

// transitionDone reports whether a backfill reached what `action --wait`
// waits for, and an error when it never will: pause waits until no run is
// running, resume until RUNNING, cancel until CANCELED; a backfill that
// finished ends every wait.
func transitionDone(action string, b backfillJSON) (bool, error) {
	if terminalStates[b.State] {
		return true, nil
	}
	switch action {
	case "pause":
		if b.State != "PAUSED" {
			return false, &exitError{ExitFailed, fmt.Errorf("backfill %s is %s again while waiting for its runs to finish (someone resumed or canceled it)", b.ID, b.State)}
		}
		return b.Counts["running"] == 0, nil
	case "resume":
		if b.State == "PAUSED" {
			return false, &exitError{ExitFailed, fmt.Errorf("backfill %s was paused again while waiting for it to run", b.ID)}
		}
		return b.State == "RUNNING", nil
	case "cancel":
		return b.State == "CANCELED", nil
	}
	return true, nil
}

// waitTransition polls after pause, resume or cancel (first is the
// transition's answer) until transitionDone, like create --wait: a live line
// on a terminal, otherwise a plain line each time the counts or the state
// changed (see plainLines). A backfill that ended FAILED exits 1.
func waitTransition(cmd *cobra.Command, c *client, asJSON bool, action string, first backfillJSON) error {
	out := cmd.OutOrStdout()
	tty := isTerminal(out)
	start := time.Now()
	var plain plainLines
	b := first
	for {
		ok, err := transitionDone(action, b)
		if err != nil {
			return err
		}
		if !asJSON {
			key := fmt.Sprintf("%s: %d running, %d queued", stateLabel(b), b.Counts["running"], b.Counts["queued"])
			line := fmt.Sprintf("%s, %s", key, time.Since(start).Round(100*time.Millisecond))
			if tty {
				fmt.Fprintf(out, "\r\033[K%s", line)
			} else if plain.due(key, time.Now(), ok) {
				fmt.Fprintln(out, line)
			}
		}
		if ok {
			break
		}
		select {
		case <-cmd.Context().Done():
			return cmd.Context().Err()
		case <-time.After(300 * time.Millisecond):
		}
		b = backfillJSON{}
		if err := c.do(cmd.Context(), "GET", "/api/v1/backfills/"+url.PathEscape(first.ID), nil, nil, &b); err != nil {
			return err
		}
	}
	if tty && !asJSON {
		fmt.Fprintln(out)
	}
	if err := printBackfill(cmd, asJSON, c, b.ID, &b); err != nil {
		return err
	}
	if b.State == "FAILED" {
		return &exitError{ExitFailed, fmt.Errorf("backfill %s ended FAILED: %d partitions failed, %d upstream failed", b.ID, b.Partitions["failed"], b.Partitions["upstream_failed"])}
	}
	return nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

func retryFailedCmd(o *clientOpts) *cobra.Command {
	var requestID string
	var expected, chunkSize, concurrency int64
	var wait bool
	cmd := &cobra.Command{
		Use:   "retry-failed ID",
		Short: "Create a child backfill of the failed and upstream-failed partitions",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.newClient()
			if err != nil {
				return err
			}
			c.withFlags(steerFlagNames)
			body := map[string]any{}
			if requestID != "" {
				body["retry_request_id"] = requestID
			}
			// Sent only when given, so that the server checks any value
			// given (0 included) as it does for create, and a setting left
			// out keeps the parent's.
			f := cmd.Flags()
			if f.Changed("chunk-size") {
				body["chunk_size"] = chunkSize
			}
			if f.Changed("concurrency") {
				body["max_concurrent_runs"] = concurrency
			}
			if f.Changed("expected-state-version") {
				body["expected_state_version"] = expected
			}
			var b backfillJSON
			if err := c.do(cmd.Context(), "POST", "/api/v1/backfills/"+url.PathEscape(args[0])+"/retry-failed", body, nil, &b); err != nil {
				return err
			}
			if wait {
				return waitBackfill(cmd, c, o.json, b.ID)
			}
			return printBackfill(cmd, o.json, c, b.ID, &b)
		},
	}
	cmd.Flags().StringVar(&requestID, "request-id", "", "repeat-safe id: the same id returns the same child")
	cmd.Flags().Int64Var(&expected, "expected-state-version", 0, "refuse (409) if the backfill changed since this state_version")
	cmd.Flags().Int64Var(&chunkSize, "chunk-size", 0, "partitions per run of the child (default: the parent's)")
	cmd.Flags().Int64Var(&concurrency, "concurrency", 0, "most runs of the child at once (default: the parent's)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the child backfill to finish")
	return cmd
}

func stateLabel(b backfillJSON) string {
	if b.PausedWithFailures {
		return "PAUSED (with failures)"
	}
	return b.State
}

func pct(done, total int64) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%d%%", done*100/total)
}

// printBackfill prints b (fetching it when nil) as a table or exact JSON.
func printBackfill(cmd *cobra.Command, asJSON bool, c *client, id string, b *backfillJSON) error {
	if asJSON {
		var raw map[string]any
		if err := c.do(cmd.Context(), "GET", "/api/v1/backfills/"+url.PathEscape(id), nil, nil, &raw); err != nil {
			return err
		}
		return printJSON(cmd.OutOrStdout(), raw)
	}
	if b == nil {
		b = &backfillJSON{}
		if err := c.do(cmd.Context(), "GET", "/api/v1/backfills/"+url.PathEscape(id), nil, nil, b); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\n", b.ID)
	if b.Title != "" {
		fmt.Fprintf(tw, "title\t%s\n", b.Title)
	}
	fmt.Fprintf(tw, "state\t%s (version %d)\n", stateLabel(*b), b.StateVersion)
	fmt.Fprintf(tw, "assets\t%s\n", strings.Join(b.Assets, ", "))
	fmt.Fprintf(tw, "selection\t%s, chunks of %d, at most %d at once\n", b.Selection, b.ChunkSize, b.MaxConcurrentRuns)
	fmt.Fprintf(tw, "partitions\t%d: %d materialized, %d failed, %d upstream failed, %d pending%s\n", b.TotalPartitions,
		b.Partitions["materialized"], b.Partitions["failed"], b.Partitions["upstream_failed"], b.Partitions["pending"], canceledNote(b.Partitions["canceled"]))
	fmt.Fprintf(tw, "runs\t%d: %d succeeded, %d failed, %d running, %d queued, %d pending%s\n", b.TotalChunks,
		b.Counts["succeeded"], b.Counts["failed"], b.Counts["running"], b.Counts["queued"], b.Counts["pending"], canceledNote(b.Counts["canceled"]))
	if b.Waiting != nil {
		fmt.Fprintf(tw, "waiting\t%s\n", b.Waiting.Reason)
	}
	if b.ParentBackfillID != nil {
		fmt.Fprintf(tw, "retry of\t%s\n", *b.ParentBackfillID)
	}
	fmt.Fprintf(tw, "created\t%s by %s\n", b.CreatedAt, b.CreatedBy)
	return tw.Flush()
}

func printPreview(w io.Writer, p map[string]any) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "partitions\t%v\n", p["total_partitions"])
	fmt.Fprintf(tw, "chunks (runs)\t%v\n", p["total_chunks"])
	if st, ok := p["status"].(map[string]any); ok {
		fmt.Fprintf(tw, "current status\t%s\n", statusLine(st))
	}
	if assets, ok := p["assets"].([]any); ok && len(assets) > 1 {
		for _, a := range assets {
			if m, ok := a.(map[string]any); ok {
				st, _ := m["status"].(map[string]any)
				fmt.Fprintf(tw, "  %v\t%v partitions in %v chunks: %s\n", m["asset"], m["partitions"], m["chunks"], statusLine(st))
			}
		}
	}
	if fc, ok := p["first_chunk"].(map[string]any); ok {
		keys, _ := fc["keys"].([]any)
		fmt.Fprintf(tw, "first chunk\t%v: %s\n", fc["asset"], keyList(keys, 8))
	}
	fmt.Fprintf(tw, "skipped\t%v\n", p["skipped_count"])
	if sk, ok := p["skipped"].([]any); ok {
		for i, s := range sk {
			if i == 5 {
				break
			}
			if m, ok := s.(map[string]any); ok {
				fmt.Fprintf(tw, "  %v %v\t%v\n", m["asset"], m["partition"], m["reason"])
			}
		}
	}
	fmt.Fprintf(tw, "estimate\t%v\n", p["estimate"])
	return tw.Flush()
}

// statusLine writes a preview's status counts as words.
func statusLine(st map[string]any) string {
	n := func(k string) int64 { f, _ := st[k].(float64); return int64(f) }
	return fmt.Sprintf("%d materialized (%d of them stale), %d failed, %d in progress, %d missing",
		n("materialized"), n("stale"), n("failed"), n("in_progress"), n("missing"))
}

// keyList writes up to max keys, then how many more there are.
func keyList(keys []any, max int) string {
	var b strings.Builder
	for i, k := range keys {
		if i == max {
			fmt.Fprintf(&b, " … (%d more)", len(keys)-max)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, k)
	}
	return b.String()
}

var terminalStates = map[string]bool{"SUCCEEDED": true, "FAILED": true, "CANCELED": true}

// waitBackfill polls until the backfill is terminal: a live progress line
// on a terminal, otherwise a plain line each time it changed (see
// plainLines). FAILED and CANCELED end with exit code 1.
func waitBackfill(cmd *cobra.Command, c *client, asJSON bool, id string) error {
	out := cmd.OutOrStdout()
	tty := isTerminal(out)
	prog := backfillProgress{c: c, id: id}
	var plain plainLines
	var b backfillJSON
	for {
		b = backfillJSON{}
		if err := c.do(cmd.Context(), "GET", "/api/v1/backfills/"+url.PathEscape(id), nil, nil, &b); err != nil {
			return err
		}
		final := terminalStates[b.State]
		if !asJSON {
			now := time.Now()
			if err := prog.poll(cmd.Context(), b, now); err != nil {
				return err
			}
			line, key := prog.line(b, now)
			if tty {
				fmt.Fprintf(out, "\r\033[K%s", line)
			} else if plain.due(key, now, final) {
				fmt.Fprintln(out, line)
			}
		}
		if final {
			break
		}
		select {
		case <-cmd.Context().Done():
			return cmd.Context().Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
	if tty && !asJSON {
		fmt.Fprintln(out)
	}
	if asJSON {
		if err := printBackfill(cmd, true, c, id, nil); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "backfill %s %s\n", b.ID, b.State)
	}
	if b.State != "SUCCEEDED" {
		return &exitError{ExitFailed, fmt.Errorf("backfill %s ended %s: %d partitions failed, %d upstream failed", b.ID, b.State, b.Partitions["failed"], b.Partitions["upstream_failed"])}
	}
	return nil
}

// canceledNote is ", N canceled" when N > 0.
func canceledNote(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d canceled", n)
}

// eventsPageLimit is the most events the API answers in one page.
const eventsPageLimit = 1000

// backfillsPageLimit and chunksPageLimit are the most backfills and chunks
// the server sends in one page.
const (
	backfillsPageLimit = 500
	chunksPageLimit    = 1000
)

// eventsCmd shows a backfill's timeline, newest first: the newest --limit
// events (following next_cursor across pages), or every one with --all,
// saying so when older events were left out.
func eventsCmd(o *clientOpts) *cobra.Command {
	var limit int
	var all bool
	cmd := &cobra.Command{
		Use:   "events ID",
		Short: "Show a backfill's event timeline, newest first (--limit N, --all)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if all && cmd.Flags().Changed("limit") {
				return usageErr("--limit and --all both say how many events to show; use one")
			}
			if limit < 1 {
				return usageErr("--limit must be 1 or more, got %d (--all shows every event)", limit)
			}
			c, err := o.newClient()
			if err != nil {
				return err
			}
			type event struct {
				ID                                int64
				Type, Subject, Actor, At, Summary string
			}
			var rows []event
			var raw []json.RawMessage
			cursor := ""
			for all || len(rows) < limit {
				n := eventsPageLimit
				if !all {
					n = min(limit-len(rows), eventsPageLimit)
				}
				q := url.Values{"limit": {fmt.Sprint(n)}}
				if cursor != "" {
					q.Set("cursor", cursor)
				}
				var page []event
				r, next, err := c.getPage(cmd.Context(), "/api/v1/backfills/"+url.PathEscape(args[0])+"/events?"+q.Encode(), "events", &page)
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
				// next_cursor, as the API sends it: "" when every event
				// is listed, else where the older ones begin.
				return printJSON(cmd.OutOrStdout(), map[string]any{"events": raw, "next_cursor": cursor})
			}
			w := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AT\tEVENT\tACTOR\tWHAT")
			for _, e := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.At, e.Type, e.Actor, e.Summary)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if cursor != "" {
				fmt.Fprintf(w, "(the newest %d events; older ones left out: --limit N shows more, --all shows every event)\n", len(rows))
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "most events to show, newest first")
	cmd.Flags().BoolVar(&all, "all", false, "show every event (follows every page)")
	return cmd
}

// runCmd shows one chunk run: its partitions with their outcomes, its
// attempts and the end of the latest attempt's log.
func runCmd(o *clientOpts) *cobra.Command {
	var maxParts, logLines, attempt int
	cmd := &cobra.Command{
		Use:   "run RUN_ID",
		Short: "Show a chunk run: its partitions and outcomes, attempts and log tail",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxParts < 0 || logLines < 0 {
				return usageErr("--partitions and --log-lines must be 0 or more")
			}
			if attempt < 0 {
				return usageErr("--attempt must be an attempt's number, 1 or more (without it: the latest attempt)")
			}
			c, err := o.newClient()
			if err != nil {
				return err
			}
			c.withFlags(backfillRunFlagNames)
			path := "/api/v1/runs/" + url.PathEscape(args[0])
			if attempt > 0 {
				path += fmt.Sprintf("?attempt=%d", attempt)
			}
			if o.json {
				var raw map[string]any
				if err := c.do(cmd.Context(), "GET", path, nil, nil, &raw); err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), raw)
			}
			var r struct {
				ID          string  `json:"id"`
				RunKey      string  `json:"run_key"`
				Asset       string  `json:"asset"`
				State       string  `json:"state"`
				Partitions  int64   `json:"partitions"`
				Attempts    int64   `json:"attempts"`
				Error       *string `json:"error"`
				AttemptList []struct {
					Attempt    int64      `json:"attempt"`
					StartedAt  time.Time  `json:"started_at"`
					FinishedAt *time.Time `json:"finished_at"`
					State      string     `json:"state"`
					Error      *string    `json:"error"`
				} `json:"attempt_list"`
				PartitionList []struct {
					Partition string `json:"partition"`
					Status    string `json:"status"`
					Error     string `json:"error"`
					Attempt   int64  `json:"attempt"`
					BuiltBy   string `json:"built_by"`
				} `json:"partition_list"`
				LogTail string `json:"log_tail"`
				Waiting *struct {
					Reason string `json:"reason"`
				} `json:"waiting"`
			}
			if err := c.do(cmd.Context(), "GET", path, nil, nil, &r); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "run\t%s (%s)\n", r.ID, r.RunKey)
			fmt.Fprintf(tw, "state\t%s\n", r.State)
			fmt.Fprintf(tw, "asset\t%s, %d partitions\n", r.Asset, r.Partitions)
			if r.Error != nil && *r.Error != "" {
				fmt.Fprintf(tw, "error\t%s\n", *r.Error)
			}
			if r.Waiting != nil {
				fmt.Fprintf(tw, "waiting\t%s\n", r.Waiting.Reason)
			}
			tw.Flush()
			fmt.Fprintln(w)
			tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ATTEMPT\tSTATE\tSTARTED\tDURATION\tERROR")
			for _, a := range r.AttemptList {
				d := "-"
				if a.FinishedAt != nil {
					d = a.FinishedAt.Sub(a.StartedAt).Round(time.Millisecond).String()
				}
				e := ""
				if a.Error != nil {
					e = *a.Error
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", a.Attempt, a.State, a.StartedAt.UTC().Format(time.RFC3339), d, e)
			}
			tw.Flush()
			if maxParts > 0 && len(r.PartitionList) > 0 {
				fmt.Fprintln(w)
				tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "PARTITION\tOUTCOME\tATTEMPT\tERROR")
				for i, p := range r.PartitionList {
					if i == maxParts {
						break
					}
					att := ""
					if p.Attempt > 0 {
						att = fmt.Sprint(p.Attempt)
					}
					e := p.Error
					if p.BuiltBy != "" {
						e = "built by " + p.BuiltBy + " after this run started"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Partition, p.Status, att, e)
				}
				tw.Flush()
				if shown := min(maxParts, len(r.PartitionList)); int64(shown) < r.Partitions {
					fmt.Fprintf(w, "(%d of %d partitions; --partitions N shows more, --json lists up to 1,000)\n", shown, r.Partitions)
				}
			}
			if logLines > 0 && r.LogTail != "" {
				lines := strings.Split(strings.TrimRight(r.LogTail, "\n"), "\n")
				shown := r.Attempts
				if attempt > 0 {
					shown = int64(attempt)
				}
				fmt.Fprintf(w, "\nlog (last %d lines of attempt %d):\n", min(logLines, len(lines)), shown)
				for _, l := range lines[max(0, len(lines)-logLines):] {
					fmt.Fprintln(w, "  "+l)
				}
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&maxParts, "partitions", 50, "partitions to list (0: none)")
	cmd.Flags().IntVar(&logLines, "log-lines", 20, "last lines of the log to show, of the latest attempt or of --attempt N (0: none)")
	cmd.Flags().IntVar(&attempt, "attempt", 0, "show this attempt's log instead of the latest one")
	return cmd
}
