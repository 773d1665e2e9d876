package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// sensorJSON is the part of the server's sensor the CLI prints.
type sensorJSON struct {
	Name      string   `json:"name"`
	Kind      string   `json:"kind"`
	Assets    []string `json:"assets"`
	Evaluator *struct {
		Kind     string `json:"kind"`
		Interval string `json:"interval"`
		Timeout  string `json:"timeout"`
	} `json:"evaluator"`
	ChunkSize         int64  `json:"chunk_size"`
	MaxConcurrentRuns int64  `json:"max_concurrent_runs"`
	Priority          int64  `json:"priority"`
	Enabled           bool   `json:"enabled"`
	Retention         string `json:"retention"`
	State             struct {
		Paused           bool    `json:"paused"`
		PausedBy         *string `json:"paused_by"`
		PausedAt         *string `json:"paused_at"`
		Status           string  `json:"status"`
		LastError        *string `json:"last_error"`
		Failures         int64   `json:"failures"`
		Cursor           *string `json:"cursor"`
		LastEvaluatedAt  *string `json:"last_evaluated_at"`
		NextEvaluationAt *string `json:"next_evaluation_at"`
		EventsAccepted   int64   `json:"events_accepted"`
		Launches         int64   `json:"launches"`
		Evaluations      int64   `json:"evaluations"`
		PrunedEvals      int64   `json:"pruned_evaluations"`
		PrunedEvents     int64   `json:"pruned_events"`
	} `json:"state"`
	LastEvent *sensorEventJSON `json:"last_event"`
}

type sensorEventJSON struct {
	MessageID  string  `json:"message_id"`
	ReceivedAt string  `json:"received_at"`
	Outcome    string  `json:"outcome"`
	Reason     *string `json:"reason"`
	BackfillID *string `json:"backfill_id"`
}

// runRequestJSON is one run request of an evaluation with its outcome.
type runRequestJSON struct {
	Assets     []string `json:"assets"`
	Partitions []string `json:"partitions"`
	Start      string   `json:"start"`
	End        string   `json:"end"`
	RunKey     string   `json:"run_key"`
	Backfill   string   `json:"backfill"`
	Skipped    string   `json:"skipped"`
	Preview    *struct {
		TotalPartitions int64 `json:"total_partitions"`
		TotalChunks     int64 `json:"total_chunks"`
	} `json:"preview"`
}

type sensorEvaluationJSON struct {
	ID           int64            `json:"id"`
	Kind         string           `json:"kind"`
	StartedAt    string           `json:"started_at"`
	DurationMs   int64            `json:"duration_ms"`
	CursorBefore *string          `json:"cursor_before"`
	CursorAfter  *string          `json:"cursor_after"`
	Requests     []runRequestJSON `json:"requests"`
	SkipReason   *string          `json:"skip_reason"`
	Error        *string          `json:"error"`
	LogTail      *string          `json:"log_tail"`
	Actor        string           `json:"actor"`
}

// evaluationsPageLimit is the most evaluations the server sends in a page.
const evaluationsPageLimit = 1000

var (
	sensorPushFlagNames = fieldFlags{"message_id": "--message-id", "partitions": "--partition", "start": "--start", "end": "--end", "assets": "--asset",
		"sensor": "", "state": ""}
	sensorEvaluateFlagNames = fieldFlags{"dry_run": "--dry-run", "sensor": "", "state": ""}
	sensorStateFlagNames    = fieldFlags{"sensor": "", "state": ""}
)

// newSensorCmd is `tessera sensor`: the workspace's sensors on a server
// (declared in its sensors: section).
func newSensorCmd() *cobra.Command {
	var o clientOpts
	cmd := &cobra.Command{Use: "sensor", Short: "List, pause, resume, evaluate the workspace's sensors on a Tessera server, and send them events"}
	addClientFlags(cmd, &o)
	cmd.AddCommand(sensorListCmd(&o), sensorGetCmd(&o), sensorEvaluationsCmd(&o),
		sensorPauseCmd(&o, "pause", "Pause a sensor: it is not evaluated, and events sent to it are refused until it is resumed"),
		sensorPauseCmd(&o, "resume", "Resume a paused sensor"),
		sensorEvaluateCmd(&o), sensorSendCmd(&o))
	return cmd
}

func sensorPath(name string) string { return "/api/v1/sensors/" + url.PathEscape(name) }

// sensorState is a sensor's state in one word: OK, ERROR, PAUSED or
// DISABLED.
func sensorState(s sensorJSON) string {
	switch {
	case !s.Enabled:
		return "DISABLED"
	case s.State.Paused:
		return "PAUSED"
	case s.State.Status == "error":
		return "ERROR"
	}
	return "OK"
}

func ptrOrDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

// sensorLast is a sensor's last evaluation or event, in a few words.
func sensorLast(s sensorJSON) string {
	if s.LastEvent != nil {
		return fmt.Sprintf("event %s %s at %s", s.LastEvent.MessageID, s.LastEvent.Outcome, s.LastEvent.ReceivedAt)
	}
	if s.State.LastEvaluatedAt != nil {
		return "evaluated at " + *s.State.LastEvaluatedAt
	}
	return "-"
}

func sensorListCmd(o *clientOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the sensors: kind, state, last evaluation or event, counts",
		Args:  cobra.NoArgs,
		RunE: o.withClient(nil, func(cmd *cobra.Command, args []string, c *client) error {
			if o.json {
				var raw map[string]any
				if err := c.do(cmd.Context(), "GET", "/api/v1/sensors", nil, nil, &raw); err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), raw)
			}
			var list struct {
				Sensors []sensorJSON `json:"sensors"`
			}
			if err := c.do(cmd.Context(), "GET", "/api/v1/sensors", nil, nil, &list); err != nil {
				return err
			}
			if len(list.Sensors) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "the workspace declares no sensor")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tKIND\tSTATE\tEVENTS\tEVALUATIONS\tBACKFILLS\tLAST\tASSETS")
			for _, s := range list.Sensors {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Kind, sensorState(s), num(s.State.EventsAccepted), num(s.State.Evaluations), num(s.State.Launches),
					sensorLast(s), strings.Join(s.Assets, ","))
			}
			return tw.Flush()
		}),
	}
}

// printSensor prints one sensor as a table.
func printSensor(w io.Writer, s sensorJSON) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "name\t%s\n", s.Name)
	kind := s.Kind
	if s.Evaluator != nil {
		kind += fmt.Sprintf(" (%s evaluator every %s, timeout %s)", s.Evaluator.Kind, s.Evaluator.Interval, s.Evaluator.Timeout)
	}
	fmt.Fprintf(tw, "kind\t%s\n", kind)
	state := sensorState(s)
	if s.State.Paused && s.State.PausedBy != nil && s.State.PausedAt != nil {
		state += fmt.Sprintf(" (by %s at %s)", *s.State.PausedBy, *s.State.PausedAt)
	}
	fmt.Fprintf(tw, "state\t%s\n", state)
	if s.State.Status == "error" && s.State.LastError != nil {
		fmt.Fprintf(tw, "last error\t%s (%d failures in a row)\n", *s.State.LastError, s.State.Failures)
	}
	fmt.Fprintf(tw, "assets\t%s\n", strings.Join(s.Assets, ", "))
	fmt.Fprintf(tw, "backfills\tchunks of %d, at most %d at once, priority %d\n", s.ChunkSize, s.MaxConcurrentRuns, s.Priority)
	if s.Kind == "poll" {
		fmt.Fprintf(tw, "cursor\t%s\n", ptrOrDash(s.State.Cursor))
		fmt.Fprintf(tw, "last evaluation\t%s\n", ptrOrDash(s.State.LastEvaluatedAt))
		fmt.Fprintf(tw, "next evaluation\t%s\n", ptrOrDash(s.State.NextEvaluationAt))
		fmt.Fprintf(tw, "counts\t%s, %s\n", nOf(s.State.Evaluations, "evaluation"), nOf(s.State.Launches, "backfill"))
		if s.Retention != "" {
			fmt.Fprintf(tw, "history\t%s\n", prunedText(s.State.PrunedEvals, "evaluation", s.Retention))
		}
	} else {
		fmt.Fprintf(tw, "counts\t%s, %s\n", nOf(s.State.EventsAccepted, "event"), nOf(s.State.Launches, "backfill"))
		if s.Retention != "" {
			fmt.Fprintf(tw, "history\t%s (their message ids still answer as duplicates)\n", prunedText(s.State.PrunedEvents, "event", s.Retention))
		}
		if e := s.LastEvent; e != nil {
			fmt.Fprintf(tw, "last event\t%s %s at %s, backfill %s\n", e.MessageID, e.Outcome, e.ReceivedAt, ptrOrDash(e.BackfillID))
		}
	}
	return tw.Flush()
}

// sensorDo sends a sensor request and prints the sensor it answers: as
// sent with --json, else as a table.
func sensorDo(cmd *cobra.Command, o *clientOpts, c *client, method, path string) error {
	if o.json {
		var raw map[string]any
		if err := c.do(cmd.Context(), method, path, nil, nil, &raw); err != nil {
			return err
		}
		return printJSON(cmd.OutOrStdout(), raw)
	}
	var s sensorJSON
	if err := c.do(cmd.Context(), method, path, nil, nil, &s); err != nil {
		return err
	}
	return printSensor(cmd.OutOrStdout(), s)
}

func sensorGetCmd(o *clientOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Show a sensor: definition, state (with the last error), cursor, counts",
		Args:  cobra.ExactArgs(1),
		RunE: o.withClient(sensorStateFlagNames, func(cmd *cobra.Command, args []string, c *client) error {
			return sensorDo(cmd, o, c, "GET", sensorPath(args[0]))
		}),
	}
}

func sensorPauseCmd(o *clientOpts, action, short string) *cobra.Command {
	return &cobra.Command{
		Use:   action + " NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: o.withClient(sensorStateFlagNames, func(cmd *cobra.Command, args []string, c *client) error {
			return sensorDo(cmd, o, c, "POST", sensorPath(args[0])+"/"+action)
		}),
	}
}

// describeRequest says a run request in a few words.
func describeRequest(r runRequestJSON) string {
	what := "every asset"
	if len(r.Assets) > 0 {
		what = strings.Join(r.Assets, ",")
	}
	sel := "from " + r.Start + " to " + r.End
	if len(r.Partitions) > 0 {
		sel = strings.Join(r.Partitions, ",")
	}
	out := what + ": " + sel
	if r.RunKey != "" {
		out += " (run key " + r.RunKey + ")"
	}
	switch {
	case r.Backfill != "":
		out += " -> backfill " + r.Backfill
	case r.Skipped != "":
		out += " -> skipped: " + r.Skipped
	case r.Preview != nil:
		out += fmt.Sprintf(" -> would build %s in %s", nOf(r.Preview.TotalPartitions, "partition"), nOf(r.Preview.TotalChunks, "chunk"))
	}
	return out
}

// printEvaluation prints one evaluation.
func printEvaluation(w io.Writer, e sensorEvaluationJSON) {
	kind := strings.ReplaceAll(e.Kind, "_", " ")
	fmt.Fprintf(w, "%s %d at %s by %s (%d ms): cursor %s -> %s\n", kind, e.ID, e.StartedAt, e.Actor, e.DurationMs, ptrOrDash(e.CursorBefore), ptrOrDash(e.CursorAfter))
	if e.Error != nil {
		fmt.Fprintf(w, "  error: %s\n", *e.Error)
	}
	if e.SkipReason != nil {
		fmt.Fprintf(w, "  skipped: %s\n", *e.SkipReason)
	}
	for _, r := range e.Requests {
		fmt.Fprintf(w, "  request %s\n", describeRequest(r))
	}
	if e.LogTail != nil && *e.LogTail != "" {
		fmt.Fprintf(w, "  log:\n")
		for _, l := range strings.Split(strings.TrimRight(*e.LogTail, "\n"), "\n") {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
}

func sensorEvaluateCmd(o *clientOpts) *cobra.Command {
	var dry bool
	cmd := &cobra.Command{
		Use:   "evaluate NAME",
		Short: "Evaluate a poll sensor now and launch what it requests (--dry-run: show it, launching nothing and keeping the cursor)",
		Args:  cobra.ExactArgs(1),
		RunE: o.withClient(sensorEvaluateFlagNames, func(cmd *cobra.Command, args []string, c *client) error {
			body := map[string]bool{"dry_run": dry}
			path := sensorPath(args[0]) + "/evaluate"
			if o.json {
				var raw map[string]any
				if err := c.do(cmd.Context(), "POST", path, body, nil, &raw); err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), raw)
			}
			var r struct {
				Evaluation sensorEvaluationJSON `json:"evaluation"`
				Requests   []runRequestJSON     `json:"requests"`
			}
			if err := c.do(cmd.Context(), "POST", path, body, nil, &r); err != nil {
				return err
			}
			r.Evaluation.Requests = r.Requests
			printEvaluation(cmd.OutOrStdout(), r.Evaluation)
			if r.Evaluation.Error != nil {
				return &exitError{ExitServer, fmt.Errorf("the evaluation failed: %s (the cursor is unchanged)", *r.Evaluation.Error)}
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&dry, "dry-run", false, "show what the evaluator would request, with what each backfill would build; launch nothing, keep the cursor")
	return cmd
}

func sensorEvaluationsCmd(o *clientOpts) *cobra.Command {
	var pages pageFlags
	cmd := &cobra.Command{
		Use:   "evaluations NAME",
		Short: "List a poll sensor's evaluations, dry runs and cursor resets, newest first, with their requests, error and log",
		Args:  cobra.ExactArgs(1),
		RunE: o.withPages(&pages, fieldFlags{"limit": "--limit"}, func(cmd *cobra.Command, args []string, c *client) error {
			rows, raw, cursor, err := fetchPages[sensorEvaluationJSON](cmd.Context(), c, sensorPath(args[0])+"/evaluations", nil, "evaluations", pages, evaluationsPageLimit)
			if err != nil {
				return err
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), map[string]any{"sensor": args[0], "evaluations": raw, "next_cursor": cursor})
			}
			if len(rows) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no evaluation yet")
				return nil
			}
			for _, e := range rows {
				printEvaluation(cmd.OutOrStdout(), e)
			}
			if cursor != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "(the newest %d evaluations; older ones left out: --limit N shows more, --all shows every evaluation)\n", len(rows))
			}
			return nil
		}),
	}
	addPageFlags(cmd, &pages, "evaluations", 20, "newest first")
	return cmd
}

func sensorSendCmd(o *clientOpts) *cobra.Command {
	var msgID, start, end string
	var parts, assets []string
	cmd := &cobra.Command{
		Use:   "send NAME --message-id ID (--partition KEY... | --start KEY --end KEY)",
		Short: "Send an event to a push sensor: it launches a backfill of those partitions, once per message id",
		Long: `Send an event to a push sensor, as a pipeline would (POST /api/v1/sensors/NAME/events).
The event launches a backfill of the partitions it names, of the sensor's
assets (or of --asset ones). Sending the same --message-id again answers the
first outcome and launches nothing, also after a restart of the server.
Sending needs the operator role: give a pipeline a token of that role.`,
		Example: `  tessera sensor send crm.account_changed --message-id crm-4711 --partition acme --partition globex`,
		Args:    cobra.ExactArgs(1),
		RunE: o.withClient(sensorPushFlagNames, func(cmd *cobra.Command, args []string, c *client) error {
			if msgID == "" {
				return usageErr("--message-id is required: a unique id of the event, so that sending it again launches nothing twice")
			}
			body := map[string]any{"message_id": msgID}
			if len(parts) > 0 {
				body["partitions"] = parts
			}
			if start != "" {
				body["start"] = start
			}
			if end != "" {
				body["end"] = end
			}
			if len(assets) > 0 {
				body["assets"] = assets
			}
			path := sensorPath(args[0]) + "/events"
			if o.json {
				var raw map[string]any
				if err := c.do(cmd.Context(), "POST", path, body, nil, &raw); err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), raw)
			}
			var r struct {
				Event    sensorEventJSON `json:"event"`
				Replayed bool            `json:"replayed"`
				Backfill json.RawMessage `json:"backfill"`
			}
			if err := c.do(cmd.Context(), "POST", path, body, nil, &r); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if r.Replayed {
				fmt.Fprintf(w, "event %s was sent before (at %s): nothing launched again\n", r.Event.MessageID, r.Event.ReceivedAt)
			} else {
				fmt.Fprintf(w, "event %s: %s\n", r.Event.MessageID, r.Event.Outcome)
			}
			if r.Event.BackfillID != nil {
				fmt.Fprintf(w, "backfill %s (`tessera backfill get %s` follows it)\n", *r.Event.BackfillID, *r.Event.BackfillID)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&msgID, "message-id", "", "the event's unique `ID` (at most 200 bytes): the same id never launches twice")
	f.StringArrayVar(&parts, "partition", nil, "a partition `KEY` the event concerns (repeat for more)")
	f.StringVar(&start, "start", "", "the first partition `KEY` of the range the event concerns")
	f.StringVar(&end, "end", "", "the last partition `KEY` of the range")
	f.StringArrayVar(&assets, "asset", nil, "only this `ASSET` of the sensor's (repeat for more; default: all of them)")
	return cmd
}

// sensorHint words the server's sensor hints as commands.
func sensorHint(kind string, p map[string]string) (string, bool) {
	if kind == "sensor_list" {
		return "`tessera sensor list` lists them", true
	}
	switch {
	case p["code"] == "not_poll":
		return fmt.Sprintf("send it events with `tessera sensor send %s`", p["sensor"]), true
	case p["state"] == "paused":
		return fmt.Sprintf("`tessera sensor resume %s` resumes it", p["sensor"]), true
	case p["state"] == "disabled in the workspace":
		return "set enabled: true on the sensor in the workspace file and reload it (`tessera workspace reload`)", true
	case p["state"] == "evaluating":
		return fmt.Sprintf("`tessera sensor evaluations %s` shows it when it is done", p["sensor"]), true
	}
	return "nothing to do", true
}

// prunedText says how many of a history (word: tick, evaluation, event)
// the retention pruned: "1234 older ticks pruned (retention 90d)".
func prunedText(n int64, word, retention string) string {
	if n == 0 {
		return fmt.Sprintf("no %ss pruned yet (retention %s)", word, retention)
	}
	return fmt.Sprintf("%s pruned (retention %s)", strings.Replace(nOf(n, word), " ", " older ", 1), retention)
}

// nOf writes "1 event", "2 events".
func nOf(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
