package cli

import (
	"regexp"
	"strings"
)

// The CLI shows the server's error messages, which are written for API
// clients: they name JSON fields (chunk_size, selector.keys) and point at
// endpoints (GET /api/v1/backfills). Everything that puts them in the CLI's
// words is in this file: per command, what sets each API field on its
// command line (fieldFlags), and the API's pointers rewritten as the CLI
// commands that do the same (apiHints).

// fieldFlags maps the API fields of a command's requests to what sets them
// on its command line. A flag ("--chunk-size") takes the field's place in
// the message; other text is added in parentheses; "" marks a field that is
// no input of the command (the backfill's state in a 409) and needs no
// note. "[]" in a field stands for any index: materializations[].status.
type fieldFlags map[string]string

var (
	// selectorFlagNames: backfill preview and create.
	selectorFlagNames = fieldFlags{
		"chunk_size":          "--chunk-size",
		"max_concurrent_runs": "--concurrency",
		"priority":            "--priority",
		"title":               "--title",
		"assets":              "", // the message names the asset
		"selector":            "chosen by --start/--end, --partition/--partitions/--partitions-file, --missing/--failed/--stale/--tainted and --dimension",
		"selector.start":      "--start",
		"selector.end":        "--end",
		"selector.keys":       "--partition/--partitions/--partitions-file",
		"selector.statuses":   "--missing/--failed/--stale/--tainted",
		"selector.dimensions": "--dimension/--dimension-value",
		"Idempotency-Key":     "--idempotency-key",
	}
	// steerFlagNames: backfill pause, resume, cancel and retry-failed.
	steerFlagNames = fieldFlags{
		"expected_state_version": "--expected-state-version",
		"terminate":              "--terminate",
		"retry_request_id":       "--request-id",
		"chunk_size":             "--chunk-size",
		"max_concurrent_runs":    "--concurrency",
		"state":                  "", // the backfill's state, which the message names
	}
	backfillListFlagNames    = fieldFlags{"state": "--state", "asset": "--asset", "limit": "--limit"}
	backfillChunksFlagNames  = fieldFlags{"state": "--state"}
	backfillRunFlagNames     = fieldFlags{"attempt": "--attempt"}
	assetPartitionsFlagNames = fieldFlags{"status": "--status", "limit": "--limit"}
	gapsFlagNames            = fieldFlags{"from": "--from"}
	// reportFlagNames: tessera report ASSET PARTITION...; the message names
	// the item's asset and partition.
	reportFlagNames = fieldFlags{
		"materializations":                "",
		"materializations[].asset":        "",
		"materializations[].partition":    "",
		"materializations[].status":       "--status",
		"materializations[].code_version": "--code-version",
		"materializations[].metadata":     "--metadata",
		"materializations[].run_id":       "--run-id",
		"materializations[].at":           "--at",
		"materializations[].error":        "--error",
		"Idempotency-Key":                 "--idempotency-key",
	}
	watermarkFlagNames = fieldFlags{"partition": "--watermark"}
	taintFlagNames     = fieldFlags{"reason": "--reason", "partition": ""}
)

// apiHints rewrite the API's pointers (an endpoint to call, a field to send)
// as the CLI command or flag that does the same. Applied in order, before
// field names become flags.
var apiHints = []struct {
	api *regexp.Regexp
	cli string
}{
	{regexp.MustCompile(`GET /api/v1/backfills/(\S+) and, if the action still applies, send its state_version`),
		"`tessera backfill get $1` shows its state and version; if the action still applies, pass that version with --expected-state-version"},
	{regexp.MustCompile(`\(the state_version you last saw\)`), "(the version `tessera backfill get ID` shows)"},
	{regexp.MustCompile(`\bat state_version\b`), "at version"},
	{regexp.MustCompile(`GET /api/v1/backfills/\{id\}/chunks \(each chunk's id is its run id;`),
		"`tessera backfill chunks ID` (the RUN column;"},
	{regexp.MustCompile(`GET /api/v1/backfills\b`), "`tessera backfill list`"},
	{regexp.MustCompile(`GET /api/v1/assets/(\S+)/partitions lists`), "`tessera asset partitions $1` lists"},
	{regexp.MustCompile(`GET /api/v1/assets lists`), "`tessera asset list` lists"},
	{regexp.MustCompile(`; give at least one partition key in selector\.keys.*$`),
		"; give at least one key with --partition, --partitions or --partitions-file, or choose partitions with --start/--end or --missing/--failed/--stale/--tainted"},
	{regexp.MustCompile(`\bthe Idempotency-Key header is\b`), "Idempotency-Key is"},
	{regexp.MustCompile(`\brepeat the original body unchanged\b`), "repeat the original command unchanged"},
}

// indexRe matches a list index in an API field: keys[3], dimensions.region[0].
var indexRe = regexp.MustCompile(`\[\d+\]`)

// lookup returns what sets an API error's field: the field itself, or the
// nearest enclosing one, so that an item of a list or map
// ("selector.keys[3]", "selector.dimensions.region[0]") names the flag of
// the list ("--partitions", "--dimension"); ok is false when the command
// does not know the field.
func (ff fieldFlags) lookup(field string) (flag string, ok bool) {
	for f := indexRe.ReplaceAllString(field, "[]"); f != ""; {
		if flag, ok := ff[f]; ok {
			return flag, true
		}
		i := strings.LastIndexAny(f, ".[")
		if i <= 0 {
			break
		}
		f = f[:i]
	}
	return "", false
}

// cliMessage is an API error message (about field, "" when none) in the
// CLI's words: pointers to endpoints become CLI commands, the field names
// the command knows become its flags, and the error's own field is named
// as the flag (or argument) that set it.
func (ff fieldFlags) cliMessage(msg, field string) string {
	for _, h := range apiHints {
		msg = h.api.ReplaceAllString(msg, h.cli)
	}
	// A field written as an identifier (chunk_size, selector.keys,
	// Idempotency-Key) is the field wherever it appears in the text; a
	// plain word (state, title) only where the message starts with it.
	for f, flag := range ff {
		if strings.HasPrefix(flag, "-") && !strings.Contains(f, "[") && strings.ContainsAny(f, "_.-") {
			msg = replaceIdentifier(msg, f, flag)
		}
	}
	if field == "" {
		return msg
	}
	flag, ok := ff.lookup(field)
	switch {
	case !ok:
		if !strings.Contains(msg, field) {
			msg += " (field " + field + ")"
		}
	case flag == "":
	case !strings.HasPrefix(flag, "-"):
		msg += " (" + flag + ")"
	case strings.HasPrefix(msg, flag+" "), strings.HasPrefix(msg, flag+":"):
	case strings.HasPrefix(msg, field+" "):
		// "attempt must be …" → "--attempt must be …"
		msg = flag + msg[len(field):]
	default:
		msg = flag + ": " + msg
	}
	return msg
}

// replaceIdentifier replaces field f in msg by flag where f stands as a
// whole identifier, not inside a longer one (chunk_size, but not
// my_chunk_size or chunk_size_max; selector.keys also before a full stop).
func replaceIdentifier(msg, f, flag string) string {
	identChar := func(c byte) bool {
		return c == '_' || c == '-' || c == '[' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	var b strings.Builder
	for {
		i := strings.Index(msg, f)
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		j := i + len(f)
		whole := (i == 0 || !identChar(msg[i-1])) &&
			(j == len(msg) || !identChar(msg[j]) || msg[j] == '.' && (j+1 == len(msg) || !identChar(msg[j+1])))
		b.WriteString(msg[:i])
		if whole {
			b.WriteString(flag)
		} else {
			b.WriteString(f)
		}
		msg = msg[j:]
	}
}
