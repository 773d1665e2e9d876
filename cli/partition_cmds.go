package cli

import (
	"encoding/json"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/handlers"
)

// newTaintCmd marks a partition invalid (admin), or clears the mark.
func newTaintCmd() *cobra.Command {
	var o clientOpts
	var reason string
	var clear bool
	cmd := &cobra.Command{
		Use:   "taint ASSET PARTITION --reason TEXT | --clear",
		Short: "Mark a partition's data invalid (admin): it shows as tainted and stale until the next build",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if clear == (reason != "") {
				return usageErr("give either --reason TEXT (why the data is wrong) or --clear")
			}
			c, err := o.newClient()
			if err != nil {
				return err
			}
			c.withFlags(taintFlagNames)
			path := "/api/v1/assets/" + url.PathEscape(args[0]) + "/partitions/" + url.PathEscape(args[1])
			var body any
			if clear {
				path += "/clear-taint"
				body = map[string]any{}
			} else {
				path += "/taint"
				body = map[string]any{"reason": reason}
			}
			var out map[string]any
			if err := c.do(cmd.Context(), "POST", path, body, nil, &out); err != nil {
				return err
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), out)
			}
			verb := "tainted"
			if clear {
				verb = "cleared the taint of"
			}
			reasonText := ""
			if s, ok := out["staleness"].(map[string]any); ok {
				if r, ok := s["reason"].(string); ok && r != "" {
					reasonText = " (now " + r + ")"
				}
			}
			sayf(cmd.OutOrStdout(), "%s %s %s%s\n", verb, args[0], args[1], reasonText)
			return nil
		},
	}
	addClientFlags(cmd, &o)
	answerJSON(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why this partition's data is wrong")
	cmd.Flags().BoolVar(&clear, "clear", false, "clear the taint instead")
	return cmd
}

// newReportCmd lets a pipeline running outside Tessera report a
// materialization (or failure) or its watermark.
func newReportCmd() *cobra.Command {
	var o clientOpts
	var status, codeVersion, metadata, runID, at, errText, watermark, idem string
	cmd := &cobra.Command{
		Use:   "report ASSET [PARTITION...]",
		Short: "Report materializations (or failures) or the watermark of a pipeline running outside Tessera",
		Long: `Report what a pipeline running outside Tessera did.

  tessera report raw.events 2025-01-01-00:00 2025-01-01-01:00 --metadata '{"rows": 1200}'
  tessera report raw.events 2025-01-01-02:00 --status failed --error "source file missing"
  tessera report raw.events --watermark 2025-01-01-02:00

Everything is validated by the server before anything is written.
--watermark records only the last partition your pipeline has processed:
the other flags describe reported partitions and are refused with it.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			asset, parts := args[0], args[1:]
			meta, err := checkReportArgs(cmd, asset, parts, status, metadata, at, errText, watermark)
			if err != nil {
				return err
			}
			c, err := o.newClient()
			if err != nil {
				return err
			}
			var out map[string]any
			if watermark != "" {
				return reportWatermark(cmd, c, &o, asset, watermark, &out)
			}
			items := reportItems(asset, parts, status, codeVersion, meta, runID, at, errText)
			headers, err := idempotencyHeader(cmd, idem)
			if err != nil {
				return err
			}
			c.withFlags(reportFlagNames)
			if err := c.do(cmd.Context(), "POST", "/api/v1/materializations", items, headers, &out); err != nil {
				return err
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), out)
			}
			recorded, _ := out["recorded"].(float64)
			replayed, _ := out["replayed"].(float64)
			switch {
			case recorded == 0 && replayed > 0:
				// A report sent again (same run id, or Idempotency-Key).
				verb := "were"
				if replayed == 1 {
					verb = "was"
				}
				sayf(cmd.OutOrStdout(), "recorded nothing new: %s of %s %s already recorded\n", countOf(replayed, status+" partition"), asset, verb)
			case replayed > 0:
				sayf(cmd.OutOrStdout(), "recorded %s of %s (%s already recorded)\n", countOf(recorded, status+" partition"), asset, count(replayed))
			default:
				sayf(cmd.OutOrStdout(), "recorded %s of %s\n", countOf(recorded, status+" partition"), asset)
			}
			return nil
		},
	}
	addClientFlags(cmd, &o)
	answerJSON(cmd)
	f := cmd.Flags()
	f.StringVar(&status, "status", "materialized", "materialized or failed")
	f.StringVar(&codeVersion, "code-version", "", "code version that built them (default: the asset's current one)")
	f.StringVar(&metadata, "metadata", "", "JSON object of metadata, e.g. '{\"rows\": 1200}'")
	f.StringVar(&runID, "run-id", "", "your pipeline's run id (the same run reporting again is a no-op)")
	f.StringVar(&at, "at", "", "when it happened (RFC 3339; default now)")
	f.StringVar(&errText, "error", "", "the error of a failed partition")
	f.StringVar(&watermark, "watermark", "", "record `KEY` as the last partition your pipeline has processed, instead of reporting partitions (no other report flag goes with it)")
	f.StringVar(&idem, "idempotency-key", "", "a request id of yours: the same report sent again with it records nothing twice; the same id with other partitions is refused")
	return cmd
}

// checkReportArgs is the usage error of a report's arguments and flags, if
// any, checked before anything is sent; it returns the parsed --metadata.
func checkReportArgs(cmd *cobra.Command, asset string, parts []string, status, metadata, at, errText, watermark string) (json.RawMessage, error) {
	if cmd.Flags().Changed("watermark") && watermark == "" {
		return nil, usageErr("--watermark needs a KEY, the last partition your pipeline has processed: tessera report %s --watermark KEY", shellQuote(asset))
	}
	if watermark != "" && len(parts) > 0 {
		return nil, usageErr("report either partitions or --watermark, not both")
	}
	if watermark != "" {
		if err := refuseReportFlagsWithWatermark(cmd, asset, watermark); err != nil {
			return nil, err
		}
	}
	if watermark == "" && len(parts) == 0 {
		return nil, usageErr("name the partitions you built (tessera report ASSET PARTITION...) or give --watermark KEY")
	}
	if status != "materialized" && status != "failed" {
		return nil, usageErr("--status must be materialized or failed, got %q", status)
	}
	if errText != "" && status != "failed" {
		// Recorded as a success, the text would be dropped.
		return nil, usageErr("--error goes with --status failed: add --status failed to report a failure, or leave --error out to report a success")
	}
	var meta json.RawMessage
	if metadata != "" {
		if !json.Valid([]byte(metadata)) || !strings.HasPrefix(strings.TrimSpace(metadata), "{") {
			return nil, usageErr("--metadata must be a JSON object such as '{\"rows\": 1200}'")
		}
		meta = json.RawMessage(metadata)
	}
	if at != "" {
		if _, err := time.Parse(time.RFC3339, at); err != nil {
			return nil, usageErr("--at %q is not an RFC 3339 time such as 2025-01-31T12:00:00Z", at)
		}
	}
	return meta, nil
}

// reportWatermark records watermark as the last partition of asset the
// pipeline has processed.
func reportWatermark(cmd *cobra.Command, c *client, o *clientOpts, asset, watermark string, out *map[string]any) error {
	c.withFlags(watermarkFlagNames)
	path := "/api/v1/assets/" + url.PathEscape(asset) + "/watermark"
	if err := c.do(cmd.Context(), "POST", path, map[string]any{"partition": watermark}, nil, out); err != nil {
		return err
	}
	if o.json {
		return printJSON(cmd.OutOrStdout(), *out)
	}
	sayf(cmd.OutOrStdout(), "watermark of %s is now %s\n", asset, watermark)
	return nil
}

// reportItems is the body of a report: one item per partition, with only
// the fields given.
func reportItems(asset string, parts []string, status, codeVersion string, meta json.RawMessage, runID, at, errText string) []map[string]any {
	items := make([]map[string]any, 0, len(parts))
	for _, p := range parts {
		it := map[string]any{"asset": asset, "partition": p, "status": status}
		if codeVersion != "" {
			it["code_version"] = codeVersion
		}
		if meta != nil {
			it["metadata"] = meta
		}
		if runID != "" {
			it["run_id"] = runID
		}
		if at != "" {
			it["at"] = at
		}
		if errText != "" {
			it["error"] = errText
		}
		items = append(items, it)
	}
	return items
}

// reportOnlyFlags describe reported partitions; a watermark is only a key.
var reportOnlyFlags = []string{"status", "error", "metadata", "run-id", "at", "code-version", "idempotency-key"}

// refuseReportFlagsWithWatermark is the usage error of a report flag given
// with --watermark: the watermark API takes a key only, so the flag would be
// dropped without a word (a --status failed --error would record nothing).
// It names the flags and gives both commands to run instead.
func refuseReportFlagsWithWatermark(cmd *cobra.Command, asset, watermark string) error {
	var names, given []string
	for _, name := range reportOnlyFlags {
		f := cmd.Flags().Lookup(name)
		if f == nil || !f.Changed {
			continue
		}
		names = append(names, "--"+name)
		given = append(given, "--"+name+" "+shellQuote(f.Value.String()))
	}
	if len(names) == 0 {
		return nil
	}
	verb := "do"
	if len(names) == 1 {
		verb = "does"
	}
	return usageErr("%s %s not go with --watermark, which records only the last partition your pipeline has processed; nothing was reported. "+
		"Record the watermark without %s: tessera report %s --watermark %s, and report a partition's outcome on its own: tessera report %s PARTITION %s",
		joinWords(names), verb, map[bool]string{true: "it", false: "them"}[len(names) == 1],
		shellQuote(asset), shellQuote(watermark), shellQuote(asset), strings.Join(given, " "))
}

// joinWords joins a, b and c as "a, b and c".
func joinWords(w []string) string {
	if len(w) <= 1 {
		return strings.Join(w, "")
	}
	return strings.Join(w[:len(w)-1], ", ") + " and " + w[len(w)-1]
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.,:/=+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// newStatusCmd prints the stakeholders' status board.
func newStatusCmd() *cobra.Command {
	var o clientOpts
	cmd := &cobra.Command{
		Use:   "status",
		Short: "The status board as a table: freshness of every asset, worst first within groups",
		Args:  cobra.NoArgs,
		RunE: o.withClient(nil, func(cmd *cobra.Command, args []string, c *client) error {
			if o.json {
				var raw any
				if err := c.do(cmd.Context(), "GET", "/status.json", nil, nil, &raw); err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), raw)
			}
			var out struct {
				Assets []handlers.AssetStatus `json:"assets"`
			}
			if err := c.do(cmd.Context(), "GET", "/status.json", nil, nil, &out); err != nil {
				return err
			}
			tw := newTable(cmd.OutOrStdout(), "GROUP\tASSET\tFRESH\tSTALE BY REASON\tLATEST FRESH\tLAG\tSTATUS")
			for _, a := range out.Assets {
				var reasons []string
				for _, r := range []string{"NEVER_MATERIALIZED", "TAINTED", "CODE_CHANGED", "UPSTREAM_CHANGED", "FRESHNESS"} {
					if n := a.ByReason[r]; n > 0 {
						reasons = append(reasons, r+" "+num(n))
					}
				}
				lag := "-"
				if a.LagSeconds != nil {
					// As the status page writes it: "206 days 6 h".
					lag = catalog.HumanDuration(time.Duration(*a.LagSeconds) * time.Second)
				}
				// Over policy with or without a lag, as the page says it: an
				// asset with a policy and no fresh partition has no lag but is
				// over its policy all the same.
				switch {
				case a.OverPolicy && a.Policy != "":
					lag += " (over policy: " + a.Policy + ")"
				case a.OverPolicy:
					lag += " (over policy)"
				}
				sayf(tw, "%s\t%s\t%s (%s/%s)\t%s\t%s\t%s\t%s\n", a.Group, a.Key, handlers.Pct(a.Fresh, a.Partitions), num(a.Fresh), num(a.Partitions),
					strings.Join(reasons, ", "), a.LatestFresh, lag, a.Badge)
			}
			return tw.Flush()
		}),
	}
	addClientFlags(cmd, &o)
	return cmd
}

// idempotencyHeader is the Idempotency-Key header of --idempotency-key
// (none when the flag is left out), or the usage error of a flag given
// empty: a script's unset variable would otherwise send no key, and the
// retry the user counted on being safe would be done twice.
func idempotencyHeader(cmd *cobra.Command, key string) (map[string]string, error) {
	headers := map[string]string{}
	if !cmd.Flags().Changed("idempotency-key") {
		return headers, nil
	}
	if strings.TrimSpace(key) == "" {
		return nil, usageErr("--idempotency-key is empty; give a key (the same key sent again returns the first answer and does nothing twice), or leave --idempotency-key out")
	}
	headers["Idempotency-Key"] = key
	return headers, nil
}
