package web

import (
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
)

// apiOp documents one API operation. Keys of apiDocs are "METHOD /path" with
// echo's :param syntax, exactly as in Routes; a test checks both directions.
type apiOp struct {
	Summary string
	Tag     string
	Query   []string // query parameter names
	Body    string   // request schema name, "" for none
	Result  string   // 2xx schema name
	Status  string   // success status, default "200"
	Idem    bool     // accepts Idempotency-Key
	// OptionalBody: the body may be left out (an empty POST is {}).
	OptionalBody bool
}

var apiDocs = map[string]apiOp{
	"GET /api/v1/me":                                             {Summary: "Who am I: name, role and how authenticated", Tag: "accounts", Result: "Me"},
	"GET /api/v1/openapi.json":                                   {Summary: "This OpenAPI 3.1 document", Tag: "meta", Result: "Object"},
	"GET /api/v1/assets":                                         {Summary: "Every asset with its scheme, partition total and counts per status", Tag: "assets", Result: "AssetList"},
	"GET /api/v1/assets/:key/partitions":                         {Summary: "An asset's partitions in order, with last materialization and last attempt", Tag: "assets", Query: []string{"status", "limit", "cursor"}, Result: "PartitionPage"},
	"POST /api/v1/assets/:key/partition-keys":                    {Summary: "Add keys to a dynamic-partitioned asset", Tag: "assets", Body: "PartitionKeys", Result: "PartitionKeysAdded"},
	"POST /api/v1/materializations":                              {Summary: "Report materializations from a pipeline running outside Tessera (validated, one transaction)", Tag: "assets", Body: "MaterializationReport", Result: "RecordResult", Status: "201", Idem: true},
	"POST /api/v1/backfills/preview":                             {Summary: "What a backfill would do (writes nothing)", Tag: "backfills", Body: "BackfillRequest", Result: "Preview"},
	"POST /api/v1/backfills":                                     {Summary: "Create a backfill", Tag: "backfills", Body: "BackfillRequest", Result: "Backfill", Status: "201", Idem: true},
	"GET /api/v1/backfills":                                      {Summary: "Backfills, newest first (?asset= only those selecting an asset)", Tag: "backfills", Query: []string{"state", "asset", "limit", "cursor"}, Result: "BackfillPage"},
	"GET /api/v1/backfills/:id":                                  {Summary: "One backfill", Tag: "backfills", Result: "Backfill"},
	"GET /api/v1/backfills/:id/chunks":                           {Summary: "A backfill's chunk runs", Tag: "backfills", Query: []string{"state", "limit", "cursor"}, Result: "ChunkPage"},
	"GET /api/v1/backfills/:id/events":                           {Summary: "A backfill's event timeline, newest first", Tag: "backfills", Query: []string{"limit", "cursor"}, Result: "EventList"},
	"POST /api/v1/backfills/:id/pause":                           {Summary: "Pause: stop planning, let active runs finish", Tag: "backfills", Body: "Steer", OptionalBody: true, Result: "Backfill"},
	"POST /api/v1/backfills/:id/resume":                          {Summary: "Resume a paused backfill", Tag: "backfills", Body: "Steer", OptionalBody: true, Result: "Backfill"},
	"POST /api/v1/backfills/:id/cancel":                          {Summary: "Cancel (terminate: true kills active runs; also escalates a graceful cancel while CANCELING)", Tag: "backfills", Body: "Transition", OptionalBody: true, Result: "Backfill"},
	"POST /api/v1/backfills/:id/retry-failed":                    {Summary: "Child backfill of the failed and upstream-failed partitions (the same retry_request_id, or Idempotency-Key, returns the same child; with other settings, 409)", Tag: "backfills", Body: "RetryFailed", OptionalBody: true, Result: "Backfill", Status: "201", Idem: true},
	"GET /api/v1/runs/:id":                                       {Summary: "A chunk run with its attempts, its first 1,000 partitions with their outcomes, why it waits (waiting, when queued) and the log tail of its latest attempt, or of attempt N with ?attempt=N", Tag: "runs", Query: []string{"attempt"}, Result: "Run"},
	"POST /api/v1/runs/:id/complete":                             {Summary: "Callback of an asynchronous (HTTP 202) executor", Tag: "runs", Body: "RunComplete", OptionalBody: true, Result: "RunCompleteAccepted", Status: "202"},
	"GET /api/v1/conflicts":                                      {Summary: "Run keys requested again with a different fingerprint", Tag: "runs", Query: []string{"limit", "cursor"}, Result: "ConflictList"},
	"GET /api/v1/status":                                         {Summary: "The status board: freshness of every asset (same as /status.json)", Tag: "staleness", Result: "StatusBoard"},
	"POST /api/v1/workspace/reload":                              {Summary: "Read the workspace file again (admin); a file with problems is refused (400) and the server keeps its workspace", Tag: "workspace", Result: "WorkspaceReloaded"},
	"GET /api/v1/users":                                          {Summary: "Accounts (admin)", Tag: "accounts", Query: []string{"limit", "cursor"}, Result: "UserPage"},
	"POST /api/v1/users":                                         {Summary: "Create an account (admin)", Tag: "accounts", Body: "NewUser", Result: "User", Status: "201", Idem: true},
	"POST /api/v1/users/:id":                                     {Summary: "Change an account's role, disable/enable it or reset its password (admin)", Tag: "accounts", Body: "UserChange", Result: "User"},
	"GET /api/v1/tokens":                                         {Summary: "API tokens: your own, or everyone's for admins (?user=NAME)", Tag: "accounts", Query: []string{"user", "limit", "cursor"}, Result: "TokenPage"},
	"POST /api/v1/tokens":                                        {Summary: "Create a token (the secret is in this answer only); admins may name another user", Tag: "accounts", Body: "NewToken", Result: "Token", Status: "201", Idem: true},
	"POST /api/v1/tokens/:id/revoke":                             {Summary: "Revoke a token (your own, or any for admins)", Tag: "accounts", Result: "Token"},
	"GET /api/v1/assets/:key/partitions/:partition/history":      {Summary: "A partition's instances, newest first, a page at a time (limit, cursor); ?at=TIME answers which instance was current then instead", Tag: "staleness", Query: []string{"at", "limit", "cursor"}, Result: "PartitionHistory"},
	"POST /api/v1/assets/:key/watermark":                         {Summary: "Record the last partition a live pipeline has processed", Tag: "staleness", Body: "Watermark", Result: "WatermarkInfo"},
	"GET /api/v1/assets/:key/gaps":                               {Summary: "Missing partition ranges up to the watermark (catch-up, or from a key)", Tag: "staleness", Query: []string{"from"}, Result: "Gaps"},
	"GET /api/v1/assets/:key/staleness":                          {Summary: "Staleness counts per reason; ?partition=KEY: that partition's reason and evidence", Tag: "staleness", Query: []string{"partition"}, Result: "Staleness"},
	"POST /api/v1/assets/:key/partitions/:partition/taint":       {Summary: "Mark a partition invalid (admin, with a reason)", Tag: "staleness", Body: "Taint", Result: "PartitionStaleness"},
	"POST /api/v1/assets/:key/partitions/:partition/clear-taint": {Summary: "Clear a taint (admin)", Tag: "staleness", Result: "PartitionStaleness"},
	"GET /api/v1/assets/:key/watermark":                          {Summary: "The asset's watermark (404 when it has none)", Tag: "staleness", Result: "WatermarkInfo"},
}

var obj = map[string]any{"type": "object"}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func arrayOf(s map[string]any) map[string]any { return map[string]any{"type": "array", "items": s} }

func object(props map[string]any, required ...string) map[string]any {
	o := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

// allRequired is an object whose every property is required.
func allRequired(props map[string]any) map[string]any {
	return object(props, keys(props)...)
}

var str = map[string]any{"type": "string"}
var integer = map[string]any{"type": "integer"}
var boolean = map[string]any{"type": "boolean"}
var counts = map[string]any{"type": "object", "additionalProperties": integer}

// timeStr is a time as every answer writes it (RFC 3339, UTC, milliseconds).
var timeStr = map[string]any{"type": "string", "format": "date-time"}

// nullable is s that may also be null.
func nullable(s map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range s {
		out[k] = v
	}
	out["type"] = []string{s["type"].(string), "null"}
	return out
}

func enum(values ...string) map[string]any { return map[string]any{"type": "string", "enum": values} }

// fixedCounts is an object of counts with exactly these keys.
func fixedCounts(keys ...string) map[string]any {
	props := map[string]any{}
	for _, k := range keys {
		props[k] = integer
	}
	o := object(props, keys...)
	o["additionalProperties"] = false
	return o
}

// selectorProps are a selector's fields; answer: as a backfill answers it.
func selectorProps(answer bool) map[string]any {
	types := []string{"range", "explicit", "filter"}
	p := map[string]any{"start": str, "end": str, "keys": arrayOf(str),
		"statuses":   arrayOf(enum("missing", "failed", "stale", "tainted")),
		"dimensions": map[string]any{"type": "object", "additionalProperties": arrayOf(str)}}
	if !answer {
		p["start"] = rangeBound("start", "first")
		p["end"] = rangeBound("end", "last")
	}
	if answer {
		types = append(types, "retry")
		p["count"] = map[string]any{"type": "integer", "description": "how many keys an explicit selector had"}
	}
	p["type"] = enum(types...)
	return p
}

// priorityProp is the priority of the backfills a schedule or sensor
// launches, bounded as a backfill's.
var priorityProp = map[string]any{"type": "integer", "minimum": catalog.MinPriority, "maximum": catalog.MaxPriority}

// rangeBound is a range's start or end in a request: a partition key, left
// out for the asset's first or last partition; "" is a 400.
func rangeBound(field, which string) map[string]any {
	return described(map[string]any{"type": "string", "minLength": 1},
		"a partition key; left out: the asset's "+which+" partition (an empty "+field+" is a 400)")
}

// chunkProps are the fields of a chunk run (in chunk lists and GET /runs/{id}).
func chunkProps() map[string]any {
	return map[string]any{"id": str, "run_key": str, "backfill_id": str, "chunk": integer, "seg": integer, "asset": str, "asset_id": integer,
		"fingerprint": str, "partitions": integer, "first_key": str, "last_key": str, "state": enum(runStates...),
		"attempts": integer, "max_attempts": integer, "not_before": nullable(timeStr), "materialized": integer, "failed": integer,
		"upstream_failed": integer, "error": nullable(str), "created_at": timeStr, "updated_at": timeStr,
		"started_at": nullable(timeStr), "finished_at": nullable(timeStr)}
}

// keys is m's keys in order.
func keys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// runSchema is a chunk run with its attempts, partitions, log and wait.
func runSchema() map[string]any {
	props := chunkProps()
	req := keys(props)
	props["attempt_list"] = arrayOf(ref("Attempt"))
	props["partition_list"] = arrayOf(object(map[string]any{"partition": str,
		"status":  enum("materialized", "failed", "upstream_failed", "in_progress", "interrupted", "canceled", "not_run"),
		"attempt": map[string]any{"type": "integer", "description": "the attempt that reported it (absent when none did)"},
		"error":   str}, "partition", "status"))
	props["log_tail"] = str
	props["waiting"] = object(map[string]any{"reason": str, "holder_run_id": map[string]any{"type": "string", "description": "the run this run waits for, when that is the reason: one building some of its partitions, or the upstream chunk holding partitions it reads"}}, "reason")
	props["waiting"].(map[string]any)["description"] = "why a queued run has not started (absent otherwise)"
	return object(props, append(req, "attempt_list", "partition_list", "log_tail")...)
}

// backfillSchema is a backfill as every backfill endpoint answers it.
func backfillSchema() map[string]any {
	props := map[string]any{"id": str, "title": str, "state": enum(db.BackfillStates...),
		"state_version": integer, "assets": arrayOf(str), "selector": ref("BackfillSelector"),
		"selection":  map[string]any{"type": "string", "description": "the selector in words, as on the backfill page"},
		"chunk_size": integer, "max_concurrent_runs": integer, "priority": integer,
		"total_partitions": integer, "total_chunks": integer, "planned_chunks": integer,
		"counts":               fixedCounts("succeeded", "failed", "canceled", "running", "queued", "pending"),
		"partitions":           fixedCounts("materialized", "failed", "upstream_failed", "pending", "canceled"),
		"paused_with_failures": boolean,
		"parent_backfill_id":   nullable(str),
		"recovered_by":         described(nullable(str), "a FAILED backfill whose Retry failed rebuilt everything it failed or skipped (directly or through retries of its own): that child's id; null otherwise"),
		"created_by":           str, "created_at": timeStr, "updated_at": timeStr,
		"started_at": nullable(timeStr), "finished_at": nullable(timeStr)}
	req := keys(props)
	props["terminate"] = map[string]any{"type": "boolean", "description": "present (true) once a cancel asked to kill active runs"}
	props["retry_request_id"] = map[string]any{"type": "string", "description": "the retry request that created this child (absent otherwise)"}
	props["waiting"] = described(object(map[string]any{"reason": str, "holder_run_id": str}, "reason"),
		"GET of one backfill: why a running backfill none of whose runs is running plans no chunk — its upstream, its pool's cap or throttle, the server's cap (absent otherwise)")
	return object(props, req...)
}

// anyJSON is any JSON value (free-form metadata).
var anyJSON = map[string]any{}

// nullableRef is schema name, or null.
func nullableRef(name string) map[string]any {
	return map[string]any{"oneOf": []any{ref(name), map[string]any{"type": "null"}}}
}

// described is s with a description.
func described(s map[string]any, d string) map[string]any {
	out := map[string]any{"description": d}
	for k, v := range s {
		out[k] = v
	}
	return out
}

// reasons are the staleness reasons; fresh: with FRESH first.
func reasons(fresh bool) []string {
	var out []string
	if fresh {
		out = append(out, string(catalog.Fresh))
	}
	for _, r := range catalog.StaleReasons {
		out = append(out, string(r))
	}
	return out
}

// staleReasons are the reasons of stale partitions (every reason but
// NEVER_MATERIALIZED).
func staleReasons() []string {
	var out []string
	for _, r := range catalog.StaleReasons {
		if r != catalog.NeverMaterialized {
			out = append(out, string(r))
		}
	}
	return out
}

// instanceSchema is a partition instance (handlers.InstanceJSON).
func instanceSchema() map[string]any {
	return object(map[string]any{"id": str, "run_id": str,
		"status":       described(str, "materialized, failed or in_progress (in_progress too for an attempt that had not finished at ?at)"),
		"code_version": str, "source": described(str, "who recorded it: backfill, api, seed, ..."),
		"started_at":    described(timeStr, "absent when unknown"),
		"finished_at":   described(timeStr, "absent while it runs"),
		"metadata":      map[string]any{"type": "object", "additionalProperties": anyJSON, "description": "as reported (absent when none)"},
		"error":         described(str, "absent when none"),
		"supersedes_id": described(str, "the instance it replaced (absent when none)")},
		"id", "run_id", "status", "code_version", "source")
}

// stalenessSchemas are the answers of the staleness, history, watermark,
// gaps and status endpoints.
func stalenessSchemas() map[string]any {
	partitionStaleness := object(map[string]any{"asset": str, "partition": str, "staleness": ref("PartitionStalenessDetail")}, "asset", "partition", "staleness")
	partitionStaleness["additionalProperties"] = false
	assetStaleness := object(map[string]any{"asset": str, "partitions": integer,
		"fresh":               described(integer, "data there and up to date"),
		"stale":               described(integer, "data there but out of date (by_reason: every reason but FRESH and NEVER_MATERIALIZED)"),
		"failed":              described(integer, "no data; the last attempt failed"),
		"in_progress":         described(integer, "being built now (not in by_reason)"),
		"missing":             described(integer, "no data; never attempted"),
		"last_attempt_failed": described(integer, "of the fresh and stale, those whose last attempt failed (their data is still there)"),
		"by_reason":           described(fixedCounts(reasons(true)...), "partitions not in progress per reason: FRESH is fresh, NEVER_MATERIALIZED is failed + missing, the others add up to stale")},
		"asset", "partitions", "fresh", "stale", "failed", "in_progress", "missing", "last_attempt_failed", "by_reason")
	assetStaleness["additionalProperties"] = false
	instances := object(map[string]any{"asset": str, "partition": str, "instances": arrayOf(ref("Instance")), "next_cursor": str},
		"asset", "partition", "instances", "next_cursor")
	instances["additionalProperties"] = false
	instances["description"] = "without ?at: the instances, newest first, a page at a time"
	at := object(map[string]any{"asset": str, "partition": str, "at": timeStr,
		"instance":     described(nullableRef("Instance"), "the canonical instance then: the newest successful build finished at or before at (null when none)"),
		"last_attempt": described(nullableRef("Instance"), "the newest attempt started by then (null when none)"),
		"tainted":      boolean,
		"taint_reason": described(str, "present when tainted"),
		"message":      described(str, "present when instance is null")},
		"asset", "partition", "at", "instance", "last_attempt", "tainted")
	at["additionalProperties"] = false
	at["description"] = "with ?at: the partition as it was at that time"
	status := allRequired(map[string]any{"asset": str, "group": str, "partitions": integer, "fresh": described(integer, "data there and up to date"), "stale": described(integer, "data there but out of date; failed and missing partitions are not stale"),
		"fresh_share":              map[string]any{"type": "number", "minimum": 0, "maximum": 1},
		"failed":                   described(integer, "no data; the last attempt failed"),
		"in_progress":              described(integer, "being built now"),
		"missing":                  described(integer, "no data; never attempted"),
		"last_attempt_failed":      described(integer, "of the fresh and stale, those whose last attempt failed (their data is still there)"),
		"stale_by_reason":          described(fixedCounts(staleReasons()...), "adds up to stale; partitions without data are failed or missing, not stale"),
		"latest_fresh_partition":   described(str, "empty when no partition is fresh"),
		"lag_seconds":              described(nullable(integer), "how far the latest fresh partition is behind now (null when none is fresh; 0 when it is the last partition of a scheme with a fixed end: nothing newer can be built)"),
		"freshness_policy":         described(str, "empty when the asset has none"),
		"over_policy":              boolean,
		"failing":                  described(boolean, "the asset's last attempt failed"),
		"badge":                    described(str, "fresh, stale N or failing"),
		"fresh_share_last_30_days": described(arrayOf(map[string]any{"type": "number"}), "per UTC day, oldest first, the share of fresh partitions whose window starts that day (-1: none)")})
	status["additionalProperties"] = false
	return map[string]any{
		"Instance":         instanceSchema(),
		"PartitionHistory": map[string]any{"oneOf": []any{instances, at}},
		"PartitionStalenessDetail": object(map[string]any{"reason": enum(reasons(true)...), "evidence": str,
			"since":                    described(timeStr, "when the partition became stale (absent when unknown or fresh)"),
			"code_version":             described(str, "CODE_CHANGED: the code version it was built with"),
			"current_code_version":     described(str, "CODE_CHANGED: the workspace's"),
			"upstream_asset":           described(str, "UPSTREAM_CHANGED: the upstream rebuilt since"),
			"upstream_partition":       str,
			"upstream_materialized_at": timeStr,
			"taint_reason":             described(str, "TAINTED: why")}, "reason", "evidence"),
		"PartitionStaleness": partitionStaleness,
		"AssetStaleness":     assetStaleness,
		"Staleness":          map[string]any{"oneOf": []any{ref("AssetStaleness"), ref("PartitionStaleness")}, "description": "without ?partition, the asset's counts; with it, that partition's reason and evidence"},
		"Gaps": object(map[string]any{"asset": str, "mode": enum("catch-up", "from"),
			"from":      described(str, "the ?from key (absent without)"),
			"watermark": described(str, "the asset's watermark (absent when it has none)"),
			"skipped":   described(boolean, "true when there is no (valid) watermark, so nothing was searched"),
			"warning":   described(str, "why the search was skipped"),
			"note":      described(str, "why there is nothing to fill"),
			"ranges":    arrayOf(object(map[string]any{"start": str, "end": str, "count": integer}, "start", "end", "count")),
			"total":     described(integer, "missing partitions in ranges"),
			"truncated": described(boolean, "more ranges than the answer lists")},
			"asset", "mode", "skipped", "ranges", "total", "truncated"),
		"PartitionKeysAdded": object(map[string]any{"set": described(str, "the dynamic partition set"),
			"added": described(integer, "keys that were new (keys already in the set are not added again)")}, "set", "added"),
		"RunCompleteAccepted": object(map[string]any{"run_id": str, "accepted": boolean}, "run_id", "accepted"),
		"WorkspaceReloaded": object(map[string]any{"source": described(str, "the workspace file read"),
			"assets": described(integer, "assets it declares"), "reloaded_at": timeStr,
			"workspace": described(object(map[string]any{"differs": boolean, "instance": described(str, "the live instance whose workspace differs"),
				"assets": described(arrayOf(str), "the assets (schedule:NAME, sensor:NAME, pool:NAME) that differ")}, "differs", "instance", "assets"),
				"present only when the file differs from the live instances' workspace: it is served but not written to the shared catalog, and this instance does not plan")},
			"source", "assets", "reloaded_at"),
		"WatermarkInfo": object(map[string]any{"asset": str, "partition": str, "set_at": timeStr,
			"actor": described(str, "who set it (GET only)")}, "asset", "partition", "set_at"),
		"AssetStatus": status,
		"StatusBoard": object(map[string]any{"generated_at": timeStr, "assets": arrayOf(ref("AssetStatus"))}, "generated_at", "assets"),
	}
}

var schemas = map[string]any{
	"Object": obj,
	"Error": object(map[string]any{"error": object(map[string]any{
		"code": str, "message": str, "field": str,
		"reason": described(str, "the message without where to look next (present with hint)"),
		"hint":   described(str, "where to look next, a kind a client words its own way (present with reason)"),
		"params": described(map[string]any{"type": "object", "additionalProperties": str}, "the hint's parameters")}, "code", "message")}, "error"),
	"Me":        object(map[string]any{"name": str, "role": map[string]any{"enum": []string{"viewer", "operator", "admin"}}, "via": str}),
	"Asset":     object(map[string]any{"key": str, "group": str, "partitions": str, "partition_kind": str, "code_version": str, "pool": str, "executor": str, "deps": arrayOf(str), "total_partitions": integer, "counts": counts, "last_materialized_at": str}),
	"AssetList": object(map[string]any{"assets": arrayOf(ref("Asset"))}),
	"Outcome":   object(map[string]any{"at": str, "run_id": str, "instance_id": str, "status": str, "code_version": str, "error": str, "metadata": obj}),
	"Partition": object(map[string]any{"partition": str, "index": integer,
		"status":               described(map[string]any{"enum": []string{"materialized", "failed", "in_progress", "missing"}}, "the last attempt's outcome (the status filter's)"),
		"health":               described(map[string]any{"enum": []string{"fresh", "stale", "failed", "in_progress", "missing"}}, "the word the health bars and counts use: failed only without data"),
		"last_attempt_failed":  described(boolean, "present when its data is there although its last attempt failed"),
		"last_materialization": ref("Outcome"), "last_attempt": ref("Outcome")}),
	"PartitionPage": object(map[string]any{"asset": str, "total_partitions": integer, "partitions": arrayOf(ref("Partition")), "next_cursor": str}),
	"PartitionKeys": object(map[string]any{"keys": arrayOf(str)}, "keys"),
	"Materialization": object(map[string]any{"asset": str, "partition": str, "status": map[string]any{"enum": []string{"materialized", "failed"}},
		"code_version": map[string]any{"type": "string", "maxLength": 200, "description": "one line, no control characters; left out, the asset's current code version"},
		"metadata":     obj, "error": map[string]any{"type": "string", "maxLength": 4000},
		"run_id":     map[string]any{"type": "string", "maxLength": 200, "description": "one line, no control characters; two reports of a partition in one batch need two run ids"},
		"at":         map[string]any{"type": "string", "format": "date-time"},
		"started_at": map[string]any{"type": "string", "format": "date-time", "description": "when the build began (at or before at); previews estimate from these durations"}}, "asset", "partition", "status"),
	"MaterializationReport": map[string]any{"oneOf": []any{ref("Materialization"), arrayOf(ref("Materialization")),
		object(map[string]any{"materializations": arrayOf(ref("Materialization"))}, "materializations")}},
	"RecordResult": object(map[string]any{"recorded": integer, "replayed": integer, "instance_ids": arrayOf(str)}),
	"Selector":     object(selectorProps(false), "type"),
	"BackfillSelector": func() map[string]any {
		o := object(selectorProps(true), "type")
		o["description"] = "the selector a backfill was created from: an explicit one keeps its key count, not its keys; a retry-failed child's is {\"type\": \"retry\"} (its keys are the parent's failures)"
		return o
	}(),
	"BackfillRequest": object(map[string]any{"assets": arrayOf(str), "selector": ref("Selector"),
		"chunk_size": map[string]any{"type": []string{"integer", "null"}, "minimum": 1, "maximum": jobs.MaxChunkSize, "default": jobs.DefaultChunkSize,
			"description": "partitions per chunk run; left out or null, the default"},
		"chunk_sizes": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "integer", "minimum": 1, "maximum": jobs.MaxChunkSize},
			"description": "the chunk size of some of the assets (asset → partitions per chunk), overriding chunk_size for them: 24 hours of an hourly asset, 7 days of a daily one"},
		"max_concurrent_runs": map[string]any{"type": []string{"integer", "null"}, "minimum": 1, "maximum": jobs.MaxConcurrentRunsCap, "default": jobs.DefaultMaxConcurrentRuns,
			"description": "most runs of this backfill at once; left out or null, the default"},
		"priority": map[string]any{"type": []string{"integer", "null"}, "minimum": catalog.MinPriority, "maximum": catalog.MaxPriority, "default": 0,
			"description": "higher runs first (backfills take turns within a priority); left out or null, 0; outside -1000..1000 a 400"}, "title": str},
		"assets", "selector"),
	"Preview": object(map[string]any{"total_partitions": integer, "total_chunks": integer, "total_runs": integer,
		"assets": arrayOf(object(map[string]any{"asset": str, "partitions": integer, "chunks": integer, "status": counts}, "asset", "partitions", "chunks", "status")),
		"first_chunk": object(map[string]any{"asset": str,
			"partitions": described(integer, "how many partitions the first chunk has"),
			"keys":       described(nullable(arrayOf(str)), "the first chunk's keys, its first 1,000 at most (fewer than partitions: the list was cut)")}, "asset", "partitions", "keys"),
		"status":            counts,
		"skipped_count":     integer,
		"skipped":           arrayOf(object(map[string]any{"asset": str, "partition": str, "reason": str}, "asset", "partition", "reason")),
		"estimated_seconds": map[string]any{"type": []string{"number", "null"}, "description": "the estimate from time per partition; null when there is no history to estimate from"},
		"estimated_range_seconds": described(map[string]any{"type": "array", "items": map[string]any{"type": "number"}, "minItems": 2, "maxItems": 2},
			"present when recent runs had another size than these chunks: [lowest, highest], from time per partition (estimated_seconds) to each run as long as a recent one"),
		"estimate": described(str, "the estimate in words, as the new-backfill page writes it (counts with thousands separators); empty in the previews a sensor's dry run recorded (its evaluation's requests)")},
		"total_partitions", "total_chunks", "total_runs", "assets", "first_chunk", "status", "skipped_count", "skipped", "estimated_seconds", "estimate"),
	"Backfill":     backfillSchema(),
	"BackfillPage": object(map[string]any{"backfills": arrayOf(ref("Backfill")), "next_cursor": str}, "backfills", "next_cursor"),
	"Chunk":        object(chunkProps(), keys(chunkProps())...),
	"ChunkPage":    object(map[string]any{"chunks": arrayOf(ref("Chunk")), "next_cursor": str}, "chunks", "next_cursor"),
	"Attempt": object(map[string]any{"run_id": str, "attempt": integer, "state": enum(db.AttemptRunning, db.AttemptSucceeded, db.AttemptFailed, db.AttemptTimeout, db.AttemptCanceled, db.AttemptInterrupted),
		"owner": str, "partitions": integer, "started_at": timeStr, "finished_at": nullable(timeStr), "error": nullable(str),
		"materialized": described(integer, "partitions the attempt built (once it ended; absent for attempts recorded before it was counted)"),
		"failed":       described(integer, "partitions the attempt failed (once it ended; absent for attempts recorded before it was counted)")},
		"run_id", "attempt", "state", "owner", "partitions", "started_at", "finished_at", "error"),
	"EventList":  object(map[string]any{"events": arrayOf(object(map[string]any{"id": integer, "type": str, "subject": str, "actor": str, "at": str, "summary": str, "payload": obj})), "next_cursor": str}),
	"Transition": object(map[string]any{"expected_state_version": integer, "terminate": map[string]any{"type": "boolean"}}),
	"Steer":      object(map[string]any{"expected_state_version": integer}),
	"RetryFailed": object(map[string]any{"retry_request_id": str,
		"chunk_size":             map[string]any{"type": []string{"integer", "null"}, "minimum": 1, "maximum": jobs.MaxChunkSize, "description": "left out or null, the parent's"},
		"max_concurrent_runs":    map[string]any{"type": []string{"integer", "null"}, "minimum": 1, "maximum": jobs.MaxConcurrentRunsCap, "description": "left out or null, the parent's"},
		"expected_state_version": integer}),
	"Run":         runSchema(),
	"RunComplete": object(map[string]any{"results": arrayOf(object(map[string]any{"partition": str, "status": str, "metadata": obj, "error": str})), "error": str}),
	"Conflict": object(map[string]any{"id": integer, "run_key": str, "backfill_id": str, "existing_fingerprint": str, "requested_fingerprint": str, "at": timeStr},
		"id", "run_key", "backfill_id", "existing_fingerprint", "requested_fingerprint", "at"),
	"ConflictList": object(map[string]any{"conflicts": arrayOf(ref("Conflict")), "next_cursor": str}, "conflicts", "next_cursor"),
	"Watermark":    object(map[string]any{"partition": str}, "partition"),
	"User": object(map[string]any{"id": integer, "name": str, "role": str, "disabled": map[string]any{"type": "boolean"}, "created_at": str,
		"locked": object(map[string]any{"failures": integer, "addresses": integer, "until": str})}),
	"UserPage":   object(map[string]any{"users": arrayOf(ref("User")), "next_cursor": str}),
	"NewUser":    object(map[string]any{"name": str, "role": map[string]any{"enum": []string{"viewer", "operator", "admin"}}, "password": str}, "name", "role", "password"),
	"UserChange": object(map[string]any{"role": str, "disabled": map[string]any{"type": "boolean"}, "password": str, "unlock": map[string]any{"type": "boolean"}}),
	"Token":      object(map[string]any{"id": integer, "user": str, "name": str, "prefix": str, "role": str, "created_at": str, "last_used_at": str, "revoked_at": str, "expires_at": str, "expired": boolean, "token": str}),
	"TokenPage":  object(map[string]any{"tokens": arrayOf(ref("Token")), "next_cursor": str}),
	"NewToken": object(map[string]any{"name": str,
		"role": described(map[string]any{"enum": []string{"viewer", "operator", "admin"}}, "left out: its user's role (within the creating token's); empty is a 400"),
		"user": str, "expires_in": str, "expires_at": str}, "name"),
	"Taint": object(map[string]any{"reason": str}, "reason"),
}

func init() { maps.Copy(schemas, stalenessSchemas()) }

// queryParam documents query parameter name of operation op ("METHOD
// /path") with the type the handler reads.
func queryParam(op, name string) map[string]any {
	if p, ok := runsListParam(op, name); ok { // web/openapi_runs.go
		return p
	}
	p := map[string]any{"name": name, "in": "query", "schema": str}
	list := func(values []string, what string) {
		// A comma-separated list: ?status=failed,missing.
		p["schema"] = arrayOf(enum(values...))
		p["style"], p["explode"] = "form", false
		p["description"] = what + ", comma-separated"
	}
	switch name {
	case "limit":
		lim := map[string]any{"type": "integer", "minimum": 1, "maximum": handlers.MaxPageLimit, "default": 100}
		if op == "GET /api/v1/backfills" {
			lim["maximum"], lim["default"] = handlers.MaxBackfillPageLimit, handlers.DefaultBackfillPageLimit
		}
		p["schema"], p["description"] = lim, "the most items of this page"
	case "status":
		list(db.Statuses, "only partitions of these statuses")
	case "state":
		if op == "GET /api/v1/backfills" {
			list(db.BackfillStates, "only backfills in these states (any case)")
		} else {
			list(runStates, "only chunk runs in these states")
		}
	case "attempt":
		p["schema"] = map[string]any{"type": "integer", "minimum": 1}
		p["description"] = "the attempt whose log to show (default: the latest)"
	case "outcome":
		list(handlers.TickOutcomes, "only ticks of these outcomes")
	default:
		if d, ok := queryParamDescriptions[name]; ok {
			p["description"] = d
		}
	}
	return p
}

// queryParamDescriptions describes the query parameters that are plain
// strings.
var queryParamDescriptions = map[string]string{
	"prefix":    "only run keys that start with this text",
	"after":     "the next_after of the previous page: run keys after this one, in key order",
	"cursor":    "the next_cursor of the previous page (opaque); leave it out for the first page. Anything else is a 400 on cursor",
	"at":        "a time: RFC 3339, \"2025-01-15 12:00\" (UTC), a date, or Unix milliseconds",
	"asset":     "only backfills selecting this asset",
	"user":      "an account name (admin), or your own",
	"from":      "a partition key: list everything missing from there, not only holes inside the materialized range",
	"partition": "a partition key: that partition's reason and evidence",
}

var runStates = []string{db.RunQueued, db.RunRunning, db.RunSucceeded, db.RunFailed, db.RunCanceled}

var paramRe = regexp.MustCompile(`:([a-zA-Z_]+)`)

// OpenAPIPath turns echo's /a/:id into OpenAPI's /a/{id}.
func OpenAPIPath(p string) string { return paramRe.ReplaceAllString(p, "{$1}") }

// OpenAPI builds the document from apiDocs and the roles in routes.
func OpenAPI(routes []Route) map[string]any {
	roles := map[string]auth.Role{}
	for _, r := range routes {
		roles[r.Method+" "+r.Path] = r.Role
	}
	paths := map[string]map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(apiDocs)) {
		method, path, _ := strings.Cut(k, " ")
		role, ok := roles[k]
		if !ok {
			role = auth.RoleAdmin // documented but not routed: the router test fails
		}
		op := apiDocs[k]
		var params []any
		for _, m := range paramRe.FindAllStringSubmatch(path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": str})
		}
		for _, q := range op.Query {
			params = append(params, queryParam(k, q))
		}
		if op.Idem {
			params = append(params, map[string]any{"name": "Idempotency-Key", "in": "header",
				"schema":      map[string]any{"type": "string", "minLength": 1, "maxLength": 200},
				"description": "the same key with the same body returns the same result; with a different body, 409; sent empty or more than once, 400"})
		}
		status := op.Status
		if status == "" {
			status = "200"
		}
		errResp := map[string]any{"description": "error", "content": map[string]any{"application/json": map[string]any{"schema": ref("Error")}}}
		o := map[string]any{
			"summary": op.Summary, "tags": []string{op.Tag}, "operationId": operationID(method, path),
			"description": "Least role: " + role.String() + ".",
			"responses": map[string]any{
				status:    map[string]any{"description": "success", "content": map[string]any{"application/json": map[string]any{"schema": ref(op.Result)}}},
				"4XX":     errResp,
				"default": errResp,
			},
		}
		unavailable := "the database does not answer (code store_unavailable: PostgreSQL down or unreachable); retry after Retry-After seconds"
		if method != http.MethodGet {
			unavailable = "the database cannot be written (code store_unwritable: disk full, locked, read-only, I/O error) or does not answer (code store_unavailable: PostgreSQL down or unreachable); nothing was changed, retry after Retry-After seconds"
		}
		o["responses"].(map[string]any)["503"] = map[string]any{
			"description": unavailable,
			"headers":     map[string]any{"Retry-After": map[string]any{"schema": map[string]any{"type": "integer"}, "description": "seconds"}},
			"content":     map[string]any{"application/json": map[string]any{"schema": ref("Error")}}}
		if role == auth.RolePublic {
			o["security"] = []any{}
		}
		if len(params) > 0 {
			o["parameters"] = params
		}
		if op.Body != "" {
			o["requestBody"] = map[string]any{"required": !op.OptionalBody, "content": map[string]any{"application/json": map[string]any{"schema": ref(op.Body)}}}
		}
		p := OpenAPIPath(path)
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		paths[p][strings.ToLower(method)] = o
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "Tessera API", "version": "1",
			"description": "Partition status, backfills and staleness. Authenticate with `Authorization: Bearer <token>` (create tokens on /settings/tokens or with `tessera token create`). Errors: `{\"error\": {\"code\", \"message\", \"field\"}}`. Lists: `limit` and `cursor` (from `next_cursor`)."},
		"servers":    []any{map[string]any{"url": "/"}},
		"security":   []any{map[string]any{"bearer": []any{}}},
		"paths":      paths,
		"components": map[string]any{"schemas": schemas, "securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}}},
	}
}

func operationID(method, path string) string {
	parts := []string{strings.ToLower(method)}
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/api/v1/"), "/") {
		seg = strings.TrimPrefix(seg, ":")
		seg = strings.NewReplacer("-", "_", ".", "_").Replace(seg)
		parts = append(parts, seg)
	}
	return strings.Join(parts, "_")
}

// openAPIHandler serves the document.
func openAPIHandler(routes []Route) echo.HandlerFunc {
	doc := OpenAPI(routes)
	return func(c echo.Context) error { return c.JSON(http.StatusOK, doc) }
}
