package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/handlers"
)

// ticksPageLimit is the most ticks the server sends in one page.
const ticksPageLimit = 1000

var scheduleTicksFlagNames = fieldFlags{"outcome": "--outcome", "limit": "--limit"}

var schedules = automation[handlers.ScheduleJSON]{plural: "schedules", print: printSchedule}

func schedulePath(name string) string { return schedules.path(name) }

// newScheduleCmd is `tessera schedule`: the workspace's schedules on a
// server (declared in its schedules: section).
func newScheduleCmd() *cobra.Command {
	var o clientOpts
	cmd := &cobra.Command{Use: "schedule", Short: "List, pause, resume and run the workspace's schedules on a Tessera server"}
	addClientFlags(cmd, &o)
	cmd.AddCommand(
		schedules.listCmd(&o, "List the schedules: state, cron, next tick and last tick", "NAME\tSTATE\tCRON\tTIMEZONE\tNEXT TICK\tLAST TICK\tASSETS",
			func(s handlers.ScheduleJSON) []any {
				next := "-"
				if len(s.NextTicks) > 0 {
					next = tableTime(s.NextTicks[0].Local)
				}
				return []any{s.Name, scheduleState(s), s.Cron, s.Timezone, next, tickOutcome(s.LastTick), strings.Join(s.Assets, ",")}
			}),
		schedules.getCmd(&o, "Show a schedule: definition, state, last tick and next 5 ticks"), scheduleTicksCmd(&o),
		schedules.actionCmd(&o, "pause", "Pause a schedule: its ticks are recorded as skipped, and not launched when it is resumed"),
		schedules.actionCmd(&o, "resume", "Resume a paused schedule (the ticks that fell while it was paused stay skipped)"),
		scheduleTriggerCmd(&o))
	return cmd
}

func scheduleState(s handlers.ScheduleJSON) string {
	switch {
	case !s.Enabled:
		return "disabled"
	case s.State.Paused:
		return "paused"
	}
	return "running"
}

// pausedBy is a schedule's or sensor's state, with who paused it and when
// when it is paused.
func pausedBy(state string, paused bool, by, at *string) string {
	if paused && by != nil && at != nil {
		state += fmt.Sprintf(" (by %s at %s)", *by, tableTime(*at))
	}
	return state
}

func tickOutcome(t *handlers.TickJSON) string {
	if t == nil {
		return "-"
	}
	if t.Reason != nil {
		return t.Outcome + " (" + *t.Reason + ")"
	}
	return t.Outcome
}

// printSchedule prints one schedule as a table.
func printSchedule(w io.Writer, s handlers.ScheduleJSON) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	sayf(tw, "name\t%s\n", s.Name)
	sayf(tw, "state\t%s\n", pausedBy(scheduleState(s), s.State.Paused, s.State.PausedBy, s.State.PausedAt))
	sayf(tw, "cron\t%s (%s)\n", s.Cron, s.Timezone)
	sayf(tw, "assets\t%s\n", strings.Join(s.Assets, ", "))
	target := s.Target
	if s.MissingWithin != "" {
		target += " " + s.MissingWithin
	}
	sayf(tw, "targets\t%s\n", target)
	sayf(tw, "backfills\tchunks of %d, at most %d at once, priority %d\n", s.ChunkSize, s.MaxConcurrentRuns, s.Priority)
	sayf(tw, "overlap\t%s\n", s.Overlap)
	sayf(tw, "catch-up\twithin %s, at most %s\n", s.Catchup.Window, nOf(int64(s.Catchup.MaxTicks), "tick"))
	sayf(tw, "ticks\t%s launched, %s skipped, %s failed\n", num(s.State.TicksLaunched), num(s.State.TicksSkipped), num(s.State.TicksFailed))
	if s.Retention != "" {
		sayf(tw, "history\t%s\n", prunedText(s.State.PrunedTicks, "tick", s.Retention))
	}
	if s.LastTick != nil {
		sayf(tw, "last tick\t%s %s\n", tableTime(s.LastTick.ScheduledForLocal), tickOutcome(s.LastTick))
	}
	if s.State.LastBackfillID != nil {
		sayf(tw, "last backfill\t%s\n", *s.State.LastBackfillID)
	}
	for i, n := range s.NextTicks {
		label := ""
		if i == 0 {
			label = "next ticks"
		}
		sayf(tw, "%s\t%s (%s)\n", label, tableTime(n.Local), tableTime(n.At))
	}
	return tw.Flush()
}

func scheduleTriggerCmd(o *clientOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "trigger NAME",
		Short: "Run a schedule now (paused or not): a manual tick that launches a backfill of what a tick now targets",
		Args:  cobra.ExactArgs(1),
		RunE: o.withClient(nil, func(cmd *cobra.Command, args []string, c *client) error {
			var r struct {
				Tick     handlers.TickJSON      `json:"tick"`
				Backfill *handlers.BackfillJSON `json:"backfill"`
			}
			if printed, err := c.doOrPrint(cmd, o.json, "POST", schedulePath(args[0])+"/trigger", nil, &r); printed || err != nil {
				return err
			}
			sayf(cmd.OutOrStdout(), "tick %s: %s\n", r.Tick.ID, tickOutcome(&r.Tick))
			if r.Backfill == nil {
				return nil
			}
			sayf(cmd.OutOrStdout(), "backfill %s launched (`tessera backfill get %s` follows it)\n", r.Backfill.ID, r.Backfill.ID)
			return nil
		}),
	}
}

func scheduleTicksCmd(o *clientOpts) *cobra.Command {
	var outcome string
	var pages pageFlags
	cmd := &cobra.Command{
		Use:   "ticks NAME",
		Short: "List a schedule's ticks, newest first",
		Args:  cobra.ExactArgs(1),
		RunE: o.withPages(&pages, scheduleTicksFlagNames, func(cmd *cobra.Command, args []string, c *client) error {
			return listing[handlers.TickJSON]{path: schedulePath(args[0]) + "/ticks", field: "ticks", pageMax: ticksPageLimit,
				filters: map[string]*string{"outcome": &outcome}, named: map[string]any{"schedule": args[0]},
				empty: "no ticks match", newestFirst: true,
				table: func(w io.Writer, rows []handlers.TickJSON) error {
					tw := newTable(w, "SCHEDULED FOR\tUTC\tOUTCOME\tBACKFILL\tBY\tID")
					for _, t := range rows {
						bf := "-"
						if t.BackfillID != nil {
							bf = *t.BackfillID
						}
						sayf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", tableTime(t.ScheduledForLocal), tableTime(t.ScheduledFor), tickOutcome(&t), bf, t.Actor, t.ID)
					}
					return tw.Flush()
				}}.show(cmd, o, c, pages)
		}),
	}
	cmd.Flags().StringVar(&outcome, "outcome", "", "only these outcomes, comma-separated (launched, queued, skipped, failed)")
	addPageFlags(cmd, &pages, "ticks", 50, "newest first")
	return cmd
}
