package cli

import (
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/catalog"
)

// runCmd shows one chunk run: its partitions with their outcomes, its
// attempts and the end of the latest attempt's log.
func runCmd(o *clientOpts) *cobra.Command {
	var maxParts, logLines, attempt int
	cmd := &cobra.Command{
		Use:   "run RUN_ID",
		Short: "Show a chunk run: its partitions and outcomes, attempts and log tail",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxParts < 0 {
				return usageErr("--partitions must be 0 or more, got %d (0 shows no partition)", maxParts)
			}
			if logLines < 0 {
				return usageErr("--log-lines must be 0 or more, got %d (0 shows no log)", logLines)
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
			var r runJSON
			if printed, err := c.doOrPrint(cmd, o.json, "GET", path, nil, &r); printed || err != nil {
				return err
			}
			printRun(cmd.OutOrStdout(), r, maxParts, logLines, attempt)
			return nil
		},
	}
	cmd.Flags().IntVar(&maxParts, "partitions", 50, "partitions to list (0: none)")
	cmd.Flags().IntVar(&logLines, "log-lines", 20, "last lines of the log to show, of the latest attempt or of --attempt N (0: none)")
	cmd.Flags().IntVar(&attempt, "attempt", 0, "show this attempt's log instead of the latest one")
	return cmd
}

// runJSON is the part of GET /api/v1/runs/{id} that `backfill run` shows.
type runJSON struct {
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

// printRun writes a run as `backfill run` shows it: the run, its attempts,
// up to maxParts of its partitions and the last logLines lines of the log
// of attempt (0: the latest).
func printRun(w io.Writer, r runJSON, maxParts, logLines, attempt int) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	sayf(tw, "run\t%s (%s)\n", r.ID, r.RunKey)
	sayf(tw, "state\t%s\n", r.State)
	sayf(tw, "asset\t%s, %s\n", r.Asset, nOf(r.Partitions, "partition"))
	if r.Error != nil && *r.Error != "" {
		sayf(tw, "error\t%s\n", *r.Error)
	}
	if r.Waiting != nil {
		sayf(tw, "waiting\t%s\n", r.Waiting.Reason)
	}
	tw.Flush()
	printRunAttempts(w, r)
	printRunPartitions(w, r, maxParts)
	printRunLog(w, r, logLines, attempt)
}

// printRunAttempts writes a run's attempts table, after a blank line.
func printRunAttempts(w io.Writer, r runJSON) {
	sayln(w)
	tw := newTable(w, "ATTEMPT\tSTATE\tSTARTED\tDURATION\tERROR")
	for _, a := range r.AttemptList {
		// As the run page and `backfill runs` write it: "305 ms", "1.2 s";
		// an attempt under way has run so long so far.
		var d string
		if a.FinishedAt != nil {
			d = catalog.HumanDuration(a.FinishedAt.Sub(a.StartedAt))
		} else {
			d = catalog.HumanDuration(max(time.Since(a.StartedAt), 0)) + " so far"
		}
		e := ""
		if a.Error != nil {
			e = *a.Error
		}
		sayf(tw, "%d\t%s\t%s\t%s\t%s\n", a.Attempt, a.State, timeCell(a.StartedAt), d, e)
	}
	tw.Flush()
}

// printRunPartitions writes up to maxParts of a run's partitions with
// their outcomes, after a blank line, and how many were left out.
func printRunPartitions(w io.Writer, r runJSON, maxParts int) {
	if maxParts > 0 && len(r.PartitionList) > 0 {
		sayln(w)
		tw := newTable(w, "PARTITION\tOUTCOME\tATTEMPT\tERROR")
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
			sayf(tw, "%s\t%s\t%s\t%s\n", p.Partition, p.Status, att, e)
		}
		tw.Flush()
		if shown := min(maxParts, len(r.PartitionList)); int64(shown) < r.Partitions {
			sayf(w, "(%s of %s partitions; --partitions N shows more, --json lists up to 1,000)\n", num(int64(shown)), num(r.Partitions))
		}
	}
}

// printRunLog writes the last logLines lines of the log of attempt (0:
// the latest), after a blank line.
func printRunLog(w io.Writer, r runJSON, logLines, attempt int) {
	if logLines > 0 && r.LogTail != "" {
		lines := strings.Split(strings.TrimRight(r.LogTail, "\n"), "\n")
		shown := r.Attempts
		if attempt > 0 {
			shown = int64(attempt)
		}
		if len(lines) > logLines {
			sayf(w, "\nlog (last %s of attempt %d; --log-lines N shows more):\n", nOf(int64(logLines), "line"), shown)
		} else {
			sayf(w, "\nlog of attempt %d (%s):\n", shown, nOf(int64(len(lines)), "line"))
		}
		for _, l := range lines[max(0, len(lines)-logLines):] {
			sayln(w, "  "+l)
		}
	}
}
