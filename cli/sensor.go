package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
)

// sensorEvaluationJSON is an evaluation as the server sends it, with its
// run requests read.
type sensorEvaluationJSON struct {
	handlers.SensorEvaluationJSON
	Requests []jobs.RequestOutcome `json:"requests"`
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
	cmd.AddCommand(
		sensors.listCmd(&o, "List the sensors: kind, state, last evaluation or event, counts", "NAME\tKIND\tSTATE\tEVENTS\tEVALUATIONS\tBACKFILLS\tLAST\tASSETS",
			func(s handlers.SensorJSON) []any {
				return []any{s.Name, s.Kind, sensorState(s), num(s.State.EventsAccepted), num(s.State.Evaluations), num(s.State.Launches),
					sensorLast(s), strings.Join(s.Assets, ",")}
			}),
		sensors.getCmd(&o, "Show a sensor: definition, state (with the last error), cursor, counts"), sensorEvaluationsCmd(&o),
		sensors.actionCmd(&o, "pause", "Pause a sensor: it is not evaluated, and events sent to it are refused until it is resumed"),
		sensors.actionCmd(&o, "resume", "Resume a paused sensor"),
		sensorEvaluateCmd(&o), sensorSendCmd(&o))
	return cmd
}

var sensors = automation[handlers.SensorJSON]{plural: "sensors", flags: sensorStateFlagNames, print: printSensor}

func sensorPath(name string) string { return sensors.path(name) }

// sensorState is a sensor's state in one word: OK, ERROR, PAUSED or
// DISABLED.
func sensorState(s handlers.SensorJSON) string {
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
func sensorLast(s handlers.SensorJSON) string {
	if s.LastEvent != nil {
		return fmt.Sprintf("event %s %s at %s", s.LastEvent.MessageID, s.LastEvent.Outcome, tableTime(s.LastEvent.ReceivedAt))
	}
	if s.State.LastEvaluatedAt != nil {
		return "evaluated at " + tableTime(*s.State.LastEvaluatedAt)
	}
	return "-"
}

// printSensor prints one sensor as a table.
func printSensor(w io.Writer, s handlers.SensorJSON) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	sayf(tw, "name\t%s\n", s.Name)
	kind := s.Kind
	if s.Evaluator != nil {
		kind += fmt.Sprintf(" (%s evaluator every %s, timeout %s)", s.Evaluator.Kind, s.Evaluator.Interval, s.Evaluator.Timeout)
	}
	sayf(tw, "kind\t%s\n", kind)
	sayf(tw, "state\t%s\n", pausedBy(sensorState(s), s.State.Paused, s.State.PausedBy, s.State.PausedAt))
	if s.State.Status == "error" && s.State.LastError != nil {
		sayf(tw, "last error\t%s (%s in a row)\n", *s.State.LastError, nOf(s.State.Failures, "failure"))
	}
	sayf(tw, "assets\t%s\n", strings.Join(s.Assets, ", "))
	sayf(tw, "backfills\tchunks of %d, at most %d at once, priority %d\n", s.ChunkSize, s.MaxConcurrentRuns, s.Priority)
	if s.Kind == "poll" {
		sayf(tw, "cursor\t%s\n", ptrOrDash(s.State.Cursor))
		sayf(tw, "last evaluation\t%s\n", tableTimePtr(s.State.LastEvaluatedAt))
		sayf(tw, "next evaluation\t%s\n", tableTimePtr(s.State.NextEvaluationAt))
		sayf(tw, "counts\t%s, %s\n", nOf(s.State.Evaluations, "evaluation"), nOf(s.State.Launches, "backfill"))
		if s.Retention != "" {
			sayf(tw, "history\t%s\n", prunedText(s.State.PrunedEvaluations, "evaluation", s.Retention))
		}
	} else {
		sayf(tw, "counts\t%s, %s\n", nOf(s.State.EventsAccepted, "event"), nOf(s.State.Launches, "backfill"))
		if s.Retention != "" {
			sayf(tw, "history\t%s (their message ids still answer as duplicates)\n", prunedText(s.State.PrunedEvents, "event", s.Retention))
		}
		if e := s.LastEvent; e != nil {
			sayf(tw, "last event\t%s %s at %s, backfill %s\n", e.MessageID, e.Outcome, tableTime(e.ReceivedAt), ptrOrDash(e.BackfillID))
		}
	}
	return tw.Flush()
}

// describeRequest says a run request in a few words.
func describeRequest(r jobs.RequestOutcome) string {
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
	sayf(w, "%s %d at %s by %s (%d ms): cursor %s -> %s\n", kind, e.ID, tableTime(e.StartedAt), e.Actor, e.DurationMs, ptrOrDash(e.CursorBefore), ptrOrDash(e.CursorAfter))
	if e.Error != nil {
		sayf(w, "  error: %s\n", *e.Error)
	}
	if e.SkipReason != nil {
		sayf(w, "  skipped: %s\n", *e.SkipReason)
	}
	for _, r := range e.Requests {
		sayf(w, "  request %s\n", describeRequest(r))
	}
	if e.LogTail != nil && *e.LogTail != "" {
		sayf(w, "  log:\n")
		for _, l := range strings.Split(strings.TrimRight(*e.LogTail, "\n"), "\n") {
			sayf(w, "    %s\n", l)
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
			var r struct {
				Evaluation sensorEvaluationJSON  `json:"evaluation"`
				Requests   []jobs.RequestOutcome `json:"requests"`
			}
			if printed, err := c.doOrPrint(cmd, o.json, "POST", sensorPath(args[0])+"/evaluate", body, &r); printed || err != nil {
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
			return listing[sensorEvaluationJSON]{path: sensorPath(args[0]) + "/evaluations", field: "evaluations", pageMax: evaluationsPageLimit,
				named: map[string]any{"sensor": args[0]}, empty: "no evaluation yet", newestFirst: true,
				table: func(w io.Writer, rows []sensorEvaluationJSON) error {
					for _, e := range rows {
						printEvaluation(w, e)
					}
					return nil
				}}.show(cmd, o, c, pages)
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
			var r struct {
				Event    handlers.SensorEventJSON `json:"event"`
				Replayed bool                     `json:"replayed"`
				Backfill json.RawMessage          `json:"backfill"`
			}
			if printed, err := c.doOrPrint(cmd, o.json, "POST", sensorPath(args[0])+"/events", body, &r); printed || err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if r.Replayed {
				sayf(w, "event %s was sent before (at %s): nothing launched again\n", r.Event.MessageID, tableTime(r.Event.ReceivedAt))
			} else {
				sayf(w, "event %s: %s\n", r.Event.MessageID, r.Event.Outcome)
			}
			if r.Event.BackfillID != nil {
				sayf(w, "backfill %s (`tessera backfill get %s` follows it)\n", *r.Event.BackfillID, *r.Event.BackfillID)
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
	case p["code"] == "not_push":
		return fmt.Sprintf("`tessera sensor evaluate %s` evaluates it now; events go to a push sensor (one without an evaluator)", p["sensor"]), true
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
