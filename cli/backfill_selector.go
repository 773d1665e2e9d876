package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/jobs"
)

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
		f.Int64Var(&s.priority, "priority", 0, fmt.Sprintf("higher runs first, %d to %d", catalog.MinPriority, catalog.MaxPriority))
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
		selector = s.bounds(map[string]any{"type": "filter", "statuses": sortedStatuses(statuses)})
		if len(dims) > 0 {
			selector["dimensions"] = dims
		}
	case ranged:
		selector = s.bounds(map[string]any{"type": "range"})
	default:
		return nil, usageErr("choose partitions: --start/--end, --partitions (or --partition, repeatable), --partitions-file, or --missing/--failed/--stale/--tainted")
	}
	return map[string]any{"assets": assets, "selector": selector, "chunk_size": s.chunkSize,
		"max_concurrent_runs": s.concurrency, "priority": s.priority, "title": s.title}, nil
}

// bounds adds --start and --end to selector, each only when given: left
// out, the API takes the asset's first or last partition (and refuses one
// sent empty).
func (s *selectorFlags) bounds(selector map[string]any) map[string]any {
	if s.start != "" {
		selector["start"] = s.start
	}
	if s.end != "" {
		selector["end"] = s.end
	}
	return selector
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

// clientRequest is the request body of the flags for assets and a client
// (of the flags o) whose errors name the selector's flags.
func (s *selectorFlags) clientRequest(cmd *cobra.Command, assets []string, o *clientOpts) (map[string]any, *client, error) {
	if err := emptySelectorFlag(cmd); err != nil {
		return nil, nil, err
	}
	if err := flagBetween("priority", s.priority, catalog.MinPriority, catalog.MaxPriority); err != nil {
		return nil, nil, err
	}
	body, err := s.request(cmd.CommandPath(), assets)
	if err != nil {
		return nil, nil, err
	}
	c, err := o.newClient()
	if err != nil {
		return nil, nil, err
	}
	c.withFlags(selectorFlagNames)
	return body, c, nil
}

func (s *selectorFlags) keys() ([]string, error) {
	if s.keysGiven {
		return s.explicitKeys, nil
	}
	var r io.Reader = os.Stdin
	if s.partitionsFile != "-" {
		f, err := os.Open(s.partitionsFile)
		if err != nil {
			return nil, usageErr("--partitions-file %s: %s", s.partitionsFile, pathProblem(err))
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
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, usageErr("--partitions-file %s: a line is longer than 1 MiB; give one partition key a line", s.partitionsFile)
	} else if err != nil {
		return nil, usageErr("--partitions-file %s: %s", s.partitionsFile, pathProblem(err))
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

// emptySelectorFlag is the usage error of --start, --end or
// --partitions-file given empty or blank: a script's unset variable would
// otherwise leave the flag out, and `--start "$START" --end K` would select
// everything from the asset's first partition.
func emptySelectorFlag(cmd *cobra.Command) error {
	f := cmd.Flags()
	for _, c := range []struct{ flag, what string }{
		{"start", "give the first partition KEY of the range, or leave --start out to begin at each asset's first partition"},
		{"end", "give the last partition KEY of the range, or leave --end out to end at each asset's last partition"},
		{"partitions-file", "give a FILE with one key a line (- for standard input), or leave --partitions-file out"},
	} {
		if v, err := f.GetString(c.flag); err == nil && f.Changed(c.flag) && strings.TrimSpace(v) == "" {
			return usageErr("--%s is empty; %s", c.flag, c.what)
		}
	}
	return nil
}
