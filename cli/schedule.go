package cli

import (
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// scheduleJSON is the part of the server's schedule the CLI prints.
type scheduleJSON struct {
	Name              string   `json:"name"`
	Cron              string   `json:"cron"`
	Timezone          string   `json:"timezone"`
	Assets            []string `json:"assets"`
	Target            string   `json:"target"`
	MissingWithin     string   `json:"missing_within"`
	ChunkSize         int64    `json:"chunk_size"`
	MaxConcurrentRuns int64    `json:"max_concurrent_runs"`
	Priority          int64    `json:"priority"`
	Overlap           string   `json:"overlap"`
	Catchup           struct {
		Window   string `json:"window"`
		MaxTicks int    `json:"max_ticks"`
	} `json:"catchup"`
	Enabled   bool   `json:"enabled"`
	Retention string `json:"retention"`
	State     struct {
		Paused         bool    `json:"paused"`
		PausedBy       *string `json:"paused_by"`
		PausedAt       *string `json:"paused_at"`
		LastBackfillID *string `json:"last_backfill_id"`
		TicksLaunched  int64   `json:"ticks_launched"`
		TicksSkipped   int64   `json:"ticks_skipped"`
		TicksFailed    int64   `json:"ticks_failed"`
		PrunedTicks    int64   `json:"pruned_ticks"`
	} `json:"state"`
	LastTick  *tickJSON `json:"last_tick"`
	NextTicks []struct {
		At    string `json:"at"`
		Local string `json:"local"`
	} `json:"next_ticks"`
}

// tickJSON is one tick as the server sends it.
type tickJSON struct {
	ID                string  `json:"id"`
	ScheduledFor      string  `json:"scheduled_for"`
	ScheduledForLocal string  `json:"scheduled_for_local"`
	Outcome           string  `json:"outcome"`
	Reason            *string `json:"reason"`
	BackfillID        *string `json:"backfill_id"`
	Manual            bool    `json:"manual"`
	Actor             string  `json:"actor"`
}

// ticksPageLimit is the most ticks the server sends in one page.
const ticksPageLimit = 1000

var scheduleTicksFlagNames = fieldFlags{"outcome": "--outcome", "limit": "--limit"}

// newScheduleCmd is `tessera schedule`: the workspace's schedules on a
// server (declared in its schedules: section).
func newScheduleCmd() *cobra.Command {
	var o clientOpts
	cmd := &cobra.Command{Use: "schedule", Short: "List, pause, resume and run the workspace's schedules on a Tessera server"}
	addClientFlags(cmd, &o)
	cmd.AddCommand(scheduleListCmd(&o), scheduleGetCmd(&o), scheduleTicksCmd(&o),
		schedulePauseCmd(&o, "pause", "Pause a schedule: its ticks are recorded as skipped, and not launched when it is resumed"),
		schedulePauseCmd(&o, "resume", "Resume a paused schedule (the ticks that fell while it was paused stay skipped)"),
		scheduleTriggerCmd(&o))
	return cmd
}

func scheduleState(s scheduleJSON) string {
	switch {
	case !s.Enabled:
		return "disabled"
	case s.State.Paused:
		return "paused"
	}
	return "running"
}

func tickOutcome(t *tickJSON) string {
	if t == nil {
		return "-"
	}
	if t.Reason != nil {
		return t.Outcome + " (" + *t.Reason + ")"
	}
	return t.Outcome
}

func scheduleListCmd(o *clientOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the schedules: state, cron, next tick and last tick",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.newClient()
			if err != nil {
				return err
			}
			if o.json {
				var raw map[string]any
				if err := c.do(cmd.Context(), "GET", "/api/v1/schedules", nil, nil, &raw); err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), raw)
			}
			var list struct {
				Schedules []scheduleJSON `json:"schedules"`
			}
			if err := c.do(cmd.Context(), "GET", "/api/v1/schedules", nil, nil, &list); err != nil {
				return err
			}
			if len(list.Schedules) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "the workspace declares no schedule")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSTATE\tCRON\tTIMEZONE\tNEXT TICK\tLAST TICK\tASSETS")
			for _, s := range list.Schedules {
				next := "-"
				if len(s.NextTicks) > 0 {
					next = s.NextTicks[0].Local
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, scheduleState(s), s.Cron, s.Timezone, next, tickOutcome(s.LastTick), strings.Join(s.Assets, ","))
			}
			return tw.Flush()
		},
	}
}

// printSchedule prints one schedule as a table.
func printSchedule(w io.Writer, s scheduleJSON) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "name\t%s\n", s.Name)
	state := scheduleState(s)
	if s.State.Paused && s.State.PausedBy != nil && s.State.PausedAt != nil {
		state += fmt.Sprintf(" (by %s at %s)", *s.State.PausedBy, *s.State.PausedAt)
	}
	fmt.Fprintf(tw, "state\t%s\n", state)
	fmt.Fprintf(tw, "cron\t%s (%s)\n", s.Cron, s.Timezone)
	fmt.Fprintf(tw, "assets\t%s\n", strings.Join(s.Assets, ", "))
	target := s.Target
	if s.MissingWithin != "" {
		target += " " + s.MissingWithin
	}
	fmt.Fprintf(tw, "targets\t%s\n", target)
	fmt.Fprintf(tw, "backfills\tchunks of %d, at most %d at once, priority %d\n", s.ChunkSize, s.MaxConcurrentRuns, s.Priority)
	fmt.Fprintf(tw, "overlap\t%s\n", s.Overlap)
	fmt.Fprintf(tw, "catch-up\twithin %s, at most %d ticks\n", s.Catchup.Window, s.Catchup.MaxTicks)
	fmt.Fprintf(tw, "ticks\t%s launched, %s skipped, %s failed\n", num(s.State.TicksLaunched), num(s.State.TicksSkipped), num(s.State.TicksFailed))
	if s.Retention != "" {
		fmt.Fprintf(tw, "history\t%s\n", prunedText(s.State.PrunedTicks, "tick", s.Retention))
	}
	if s.LastTick != nil {
		fmt.Fprintf(tw, "last tick\t%s %s\n", s.LastTick.ScheduledForLocal, tickOutcome(s.LastTick))
	}
	if s.State.LastBackfillID != nil {
		fmt.Fprintf(tw, "last backfill\t%s\n", *s.State.LastBackfillID)
	}
	for i, n := range s.NextTicks {
		label := ""
		if i == 0 {
			label = "next ticks"
		}
		fmt.Fprintf(tw, "%s\t%s (%s)\n", label, n.Local, n.At)
	}
	return tw.Flush()
}

// scheduleDo sends a schedule request and prints the schedule it answers:
// as sent with --json, else as a table.
func scheduleDo(cmd *cobra.Command, o *clientOpts, method, path string) error {
	c, err := o.newClient()
	if err != nil {
		return err
	}
	if o.json {
		var raw map[string]any
		if err := c.do(cmd.Context(), method, path, nil, nil, &raw); err != nil {
			return err
		}
		return printJSON(cmd.OutOrStdout(), raw)
	}
	var s scheduleJSON
	if err := c.do(cmd.Context(), method, path, nil, nil, &s); err != nil {
		return err
	}
	return printSchedule(cmd.OutOrStdout(), s)
}

func schedulePath(name string) string { return "/api/v1/schedules/" + url.PathEscape(name) }

func scheduleGetCmd(o *clientOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Show a schedule: definition, state, last tick and next 5 ticks",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return scheduleDo(cmd, o, "GET", schedulePath(args[0]))
		},
	}
}

func schedulePauseCmd(o *clientOpts, action, short string) *cobra.Command {
	return &cobra.Command{
		Use:   action + " NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return scheduleDo(cmd, o, "POST", schedulePath(args[0])+"/"+action)
		},
	}
}

func scheduleTriggerCmd(o *clientOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "trigger NAME",
		Short: "Run a schedule now (paused or not): a manual tick that launches a backfill of what a tick now targets",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.newClient()
			if err != nil {
				return err
			}
			path := schedulePath(args[0]) + "/trigger"
			if o.json {
				var raw map[string]any
				if err := c.do(cmd.Context(), "POST", path, nil, nil, &raw); err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), raw)
			}
			var r struct {
				Tick     tickJSON      `json:"tick"`
				Backfill *backfillJSON `json:"backfill"`
			}
			if err := c.do(cmd.Context(), "POST", path, nil, nil, &r); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "tick %s: %s\n", r.Tick.ID, tickOutcome(&r.Tick))
			if r.Backfill == nil {
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "backfill %s launched (`tessera backfill get %s` follows it)\n", r.Backfill.ID, r.Backfill.ID)
			return nil
		},
	}
}

func scheduleTicksCmd(o *clientOpts) *cobra.Command {
	var outcome string
	var pages pageFlags
	cmd := &cobra.Command{
		Use:   "ticks NAME",
		Short: "List a schedule's ticks, newest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := pages.check(cmd); err != nil {
				return err
			}
			c, err := o.newClient()
			if err != nil {
				return err
			}
			c.withFlags(scheduleTicksFlagNames)
			q := url.Values{}
			if outcome != "" {
				q.Set("outcome", outcome)
			}
			rows, raw, cursor, err := fetchPages[tickJSON](cmd.Context(), c, schedulePath(args[0])+"/ticks", q, "ticks", pages, ticksPageLimit)
			if err != nil {
				return err
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), map[string]any{"schedule": args[0], "ticks": raw, "next_cursor": cursor})
			}
			if len(rows) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no ticks match")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SCHEDULED FOR\tUTC\tOUTCOME\tBACKFILL\tBY\tID")
			for _, t := range rows {
				bf := "-"
				if t.BackfillID != nil {
					bf = *t.BackfillID
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ScheduledForLocal, t.ScheduledFor, tickOutcome(&t), bf, t.Actor, t.ID)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if cursor != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "(the newest %d ticks; older ones left out: --limit N shows more, --all shows every tick)\n", len(rows))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&outcome, "outcome", "", "only these outcomes, comma-separated (launched, queued, skipped, failed)")
	addPageFlags(cmd, &pages, "ticks", 50, "newest first")
	return cmd
}
