package cli

import (
	"fmt"
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

// cliHint words the server's hint (where to look next after an error;
// handlers/error_hints.go lists the kinds) as the CLI command or flag that
// does it; ok is false for a kind it does not know, whose message is then
// shown as the server wrote it.
func cliHint(kind string, p map[string]string) (string, bool) {
	switch kind {
	case "asset_list":
		return "`tessera asset list` lists the declared assets", true
	case "asset_partitions":
		return fmt.Sprintf("`tessera asset partitions %s` lists its partitions", p["asset"]), true
	case "backfill_list":
		return "list backfills with `tessera backfill list`", true
	case "run_list":
		return "a backfill's runs are the chunks listed by `tessera backfill chunks ID` (the RUN column; list backfills with `tessera backfill list`)", true
	case "reread_backfill":
		return fmt.Sprintf("`tessera backfill get %s` shows its state and version; if the action still applies, pass that version with --expected-state-version", p["backfill"]), true
	case "expected_version":
		return "pass the version `tessera backfill get ID` shows, or leave --expected-state-version out to skip the check", true
	case "user_list":
		return "`tessera user list` lists the accounts", true
	case "token_list":
		return "`tessera token list` lists the tokens (the ID column)", true
	case "empty_keys":
		return "give at least one key with --partition, --partitions or --partitions-file, or choose partitions with --start/--end or --missing/--failed/--stale/--tainted", true
	case "idempotency_conflict":
		return "send a new --idempotency-key for a new request, or repeat the original command unchanged to get its answer again", true
	case "schedule_list":
		return "`tessera schedule list` lists them", true
	case "schedule_state":
		if p["state"] == "paused" {
			return fmt.Sprintf("`tessera schedule resume %s` resumes it", p["schedule"]), true
		}
		return "nothing to do", true
	case "sensor_list", "sensor_state":
		return sensorHint(kind, p)
	}
	return "", false
}

// withoutIndexes writes every list index of an API field as "[]":
// selector.keys[3] → selector.keys[], dimensions.region[0] →
// dimensions.region[].
func withoutIndexes(field string) string {
	var b strings.Builder
	for i := 0; i < len(field); i++ {
		b.WriteByte(field[i])
		if field[i] != '[' {
			continue
		}
		j := i + 1
		for j < len(field) && field[j] >= '0' && field[j] <= '9' {
			j++
		}
		if j > i+1 && j < len(field) && field[j] == ']' {
			i = j - 1 // the loop writes the ']'
		}
	}
	return b.String()
}

// lookup returns what sets an API error's field: the field itself, or the
// nearest enclosing one, so that an item of a list or map
// ("selector.keys[3]", "selector.dimensions.region[0]") names the flag of
// the list ("--partitions", "--dimension"); ok is false when the command
// does not know the field.
func (ff fieldFlags) lookup(field string) (flag string, ok bool) {
	for f := withoutIndexes(field); f != ""; {
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
// CLI's words: the field names the command knows become its flags, and the
// error's own field is named as the flag (or argument) that set it. Where
// to look next comes from the error's hint (cliHint), not from its text.
func (ff fieldFlags) cliMessage(msg, field string) string {
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
