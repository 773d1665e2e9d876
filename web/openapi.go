package web

import (
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"

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
	"POST /api/v1/assets/:key/partition-keys":                    {Summary: "Add keys to a dynamic-partitioned asset", Tag: "assets", Body: "PartitionKeys", Result: "Object"},
	"POST /api/v1/materializations":                              {Summary: "Report materializations from a pipeline running outside Tessera (validated, one transaction)", Tag: "assets", Body: "MaterializationReport", Result: "RecordResult", Status: "201", Idem: true},
	"POST /api/v1/backfills/preview":                             {Summary: "What a backfill would do (writes nothing)", Tag: "backfills", Body: "BackfillRequest", Result: "Preview"},
	"POST /api/v1/backfills":                                     {Summary: "Create a backfill", Tag: "backfills", Body: "BackfillRequest", Result: "Backfill", Status: "201", Idem: true},
	"GET /api/v1/backfills":                                      {Summary: "Backfills, newest first (?asset= only those selecting an asset)", Tag: "backfills", Query: []string{"state", "asset", "limit", "cursor"}, Result: "BackfillPage"},
	"GET /api/v1/backfills/:id":                                  {Summary: "One backfill", Tag: "backfills", Result: "Backfill"},
	"GET /api/v1/backfills/:id/chunks":                           {Summary: "A backfill's chunk runs", Tag: "backfills", Query: []string{"state", "limit", "cursor"}, Result: "ChunkPage"},
	"GET /api/v1/backfills/:id/events":                           {Summary: "A backfill's event timeline, newest first", Tag: "backfills", Query: []string{"limit", "cursor"}, Result: "EventList"},
	"POST /api/v1/backfills/:id/pause":                           {Summary: "Pause: stop planning, let active runs finish", Tag: "backfills", Body: "Transition", OptionalBody: true, Result: "Backfill"},
	"POST /api/v1/backfills/:id/resume":                          {Summary: "Resume a paused backfill", Tag: "backfills", Body: "Transition", OptionalBody: true, Result: "Backfill"},
	"POST /api/v1/backfills/:id/cancel":                          {Summary: "Cancel (terminate: true kills active runs; also escalates a graceful cancel while CANCELING)", Tag: "backfills", Body: "Transition", OptionalBody: true, Result: "Backfill"},
	"POST /api/v1/backfills/:id/retry-failed":                    {Summary: "Child backfill of the failed and upstream-failed partitions (the same retry_request_id, or Idempotency-Key, returns the same child; with other settings, 409)", Tag: "backfills", Body: "RetryFailed", OptionalBody: true, Result: "Backfill", Status: "201", Idem: true},
	"GET /api/v1/runs/:id":                                       {Summary: "A chunk run with its attempts, its first 1,000 partitions with their outcomes, why it waits (waiting, when queued) and the log tail of its latest attempt, or of attempt N with ?attempt=N", Tag: "runs", Query: []string{"attempt"}, Result: "Run"},
	"POST /api/v1/runs/:id/complete":                             {Summary: "Callback of an asynchronous (HTTP 202) executor", Tag: "runs", Body: "RunComplete", OptionalBody: true, Result: "Object", Status: "202"},
	"GET /api/v1/conflicts":                                      {Summary: "Run keys requested again with a different fingerprint", Tag: "runs", Query: []string{"limit", "cursor"}, Result: "ConflictList"},
	"GET /api/v1/status":                                         {Summary: "The status board: freshness of every asset (same as /status.json)", Tag: "staleness", Result: "Object"},
	"POST /api/v1/workspace/reload":                              {Summary: "Read the workspace file again (admin); a file with problems is refused (400) and the server keeps its workspace", Tag: "workspace", Result: "Object"},
	"GET /api/v1/users":                                          {Summary: "Accounts (admin)", Tag: "accounts", Query: []string{"limit", "cursor"}, Result: "UserPage"},
	"POST /api/v1/users":                                         {Summary: "Create an account (admin)", Tag: "accounts", Body: "NewUser", Result: "User", Status: "201", Idem: true},
	"POST /api/v1/users/:id":                                     {Summary: "Change an account's role, disable/enable it or reset its password (admin)", Tag: "accounts", Body: "UserChange", Result: "User"},
	"GET /api/v1/tokens":                                         {Summary: "API tokens: your own, or everyone's for admins (?user=NAME)", Tag: "accounts", Query: []string{"user", "limit", "cursor"}, Result: "TokenPage"},
	"POST /api/v1/tokens":                                        {Summary: "Create a token (the secret is in this answer only); admins may name another user", Tag: "accounts", Body: "NewToken", Result: "Token", Status: "201", Idem: true},
	"POST /api/v1/tokens/:id/revoke":                             {Summary: "Revoke a token (your own, or any for admins)", Tag: "accounts", Result: "Token"},
	"GET /api/v1/assets/:key/partitions/:partition/history":      {Summary: "A partition's instances, newest first, a page at a time (limit, cursor); ?at=TIME answers which instance was current then instead", Tag: "staleness", Query: []string{"at", "limit", "cursor"}, Result: "Object"},
	"POST /api/v1/assets/:key/watermark":                         {Summary: "Record the last partition a live pipeline has processed", Tag: "staleness", Body: "Watermark", Result: "Object"},
	"GET /api/v1/assets/:key/gaps":                               {Summary: "Missing partition ranges up to the watermark (catch-up, or from a key)", Tag: "staleness", Query: []string{"from"}, Result: "Object"},
	"GET /api/v1/assets/:key/staleness":                          {Summary: "Staleness counts per reason; ?partition=KEY: that partition's reason and evidence", Tag: "staleness", Query: []string{"partition"}, Result: "Object"},
	"POST /api/v1/assets/:key/partitions/:partition/taint":       {Summary: "Mark a partition invalid (admin, with a reason)", Tag: "staleness", Body: "Taint", Result: "Object"},
	"POST /api/v1/assets/:key/partitions/:partition/clear-taint": {Summary: "Clear a taint (admin)", Tag: "staleness", Result: "Object"},
	"GET /api/v1/assets/:key/watermark":                          {Summary: "The asset's watermark, if any", Tag: "staleness", Result: "Object"},
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

var str = map[string]any{"type": "string"}
var integer = map[string]any{"type": "integer"}
var counts = map[string]any{"type": "object", "additionalProperties": integer}

var schemas = map[string]any{
	"Object": obj,
	"Error": object(map[string]any{"error": object(map[string]any{
		"code": str, "message": str, "field": str}, "code", "message")}, "error"),
	"Me":        object(map[string]any{"name": str, "role": map[string]any{"enum": []string{"viewer", "operator", "admin"}}, "via": str}),
	"Asset":     object(map[string]any{"key": str, "group": str, "partitions": str, "partition_kind": str, "code_version": str, "pool": str, "executor": str, "deps": arrayOf(str), "total_partitions": integer, "counts": counts, "last_materialized_at": str}),
	"AssetList": object(map[string]any{"assets": arrayOf(ref("Asset"))}),
	"Outcome":   object(map[string]any{"at": str, "run_id": str, "instance_id": str, "status": str, "code_version": str, "error": str, "metadata": obj}),
	"Partition": object(map[string]any{"partition": str, "index": integer, "status": map[string]any{"enum": []string{"materialized", "failed", "in_progress", "missing"}},
		"last_materialization": ref("Outcome"), "last_attempt": ref("Outcome")}),
	"PartitionPage": object(map[string]any{"asset": str, "total_partitions": integer, "partitions": arrayOf(ref("Partition")), "next_cursor": str}),
	"PartitionKeys": object(map[string]any{"keys": arrayOf(str)}, "keys"),
	"Materialization": object(map[string]any{"asset": str, "partition": str, "status": map[string]any{"enum": []string{"materialized", "failed"}},
		"code_version": str, "metadata": obj, "error": str, "run_id": str, "at": map[string]any{"type": "string", "format": "date-time"},
		"started_at": map[string]any{"type": "string", "format": "date-time", "description": "when the build began (at or before at); previews estimate from these durations"}}, "asset", "partition", "status"),
	"MaterializationReport": map[string]any{"oneOf": []any{ref("Materialization"), arrayOf(ref("Materialization")),
		object(map[string]any{"materializations": arrayOf(ref("Materialization"))}, "materializations")}},
	"RecordResult": object(map[string]any{"recorded": integer, "replayed": integer, "instance_ids": arrayOf(str)}),
	"Selector": object(map[string]any{"type": map[string]any{"enum": []string{"range", "explicit", "filter"}}, "start": str, "end": str, "keys": arrayOf(str),
		"statuses": arrayOf(map[string]any{"enum": []string{"missing", "failed", "stale", "tainted"}}), "dimensions": map[string]any{"type": "object", "additionalProperties": arrayOf(str)}}, "type"),
	"BackfillRequest": object(map[string]any{"assets": arrayOf(str), "selector": ref("Selector"),
		"chunk_size": map[string]any{"type": "integer", "minimum": 1, "maximum": jobs.MaxChunkSize, "default": jobs.DefaultChunkSize,
			"description": "partitions per chunk run; left out, the default"},
		"max_concurrent_runs": map[string]any{"type": "integer", "minimum": 1, "maximum": jobs.MaxConcurrentRunsCap, "default": jobs.DefaultMaxConcurrentRuns,
			"description": "most runs of this backfill at once; left out, the default"},
		"priority": map[string]any{"type": "integer", "default": 0}, "title": str},
		"assets", "selector"),
	"Preview": object(map[string]any{"total_partitions": integer, "total_chunks": integer, "total_runs": integer, "assets": arrayOf(obj), "first_chunk": obj,
		"status": counts, "skipped_count": integer, "skipped": arrayOf(obj), "estimated_seconds": map[string]any{"type": []string{"number", "null"}}, "estimate": str}),
	"Backfill": object(map[string]any{"id": str, "title": str, "state": map[string]any{"enum": []string{"PENDING", "RUNNING", "PAUSED", "CANCELING", "CANCELED", "SUCCEEDED", "FAILED"}},
		"state_version": integer, "assets": arrayOf(str), "selector": ref("Selector"), "chunk_size": integer, "max_concurrent_runs": integer, "priority": integer,
		"total_partitions": integer, "total_chunks": integer, "planned_chunks": integer, "counts": counts, "partitions": counts, "paused_with_failures": map[string]any{"type": "boolean"},
		"parent_backfill_id": str, "created_by": str, "created_at": str, "started_at": str, "finished_at": str}),
	"BackfillPage": object(map[string]any{"backfills": arrayOf(ref("Backfill")), "next_cursor": str}),
	"ChunkPage":    object(map[string]any{"chunks": arrayOf(obj), "next_cursor": str}),
	"EventList":    object(map[string]any{"events": arrayOf(object(map[string]any{"id": integer, "type": str, "subject": str, "actor": str, "at": str, "summary": str, "payload": obj})), "next_cursor": str}),
	"Transition":   object(map[string]any{"expected_state_version": integer, "terminate": map[string]any{"type": "boolean"}}),
	"RetryFailed":  object(map[string]any{"retry_request_id": str, "chunk_size": integer, "max_concurrent_runs": integer, "expected_state_version": integer}),
	"Run":          obj,
	"RunComplete":  object(map[string]any{"results": arrayOf(object(map[string]any{"partition": str, "status": str, "metadata": obj, "error": str})), "error": str}),
	"ConflictList": object(map[string]any{"conflicts": arrayOf(obj), "next_cursor": str}),
	"Watermark":    object(map[string]any{"partition": str}, "partition"),
	"User":         object(map[string]any{"id": integer, "name": str, "role": str, "disabled": map[string]any{"type": "boolean"}, "created_at": str}),
	"UserPage":     object(map[string]any{"users": arrayOf(ref("User")), "next_cursor": str}),
	"NewUser":      object(map[string]any{"name": str, "role": map[string]any{"enum": []string{"viewer", "operator", "admin"}}, "password": str}, "name", "role", "password"),
	"UserChange":   object(map[string]any{"role": str, "disabled": map[string]any{"type": "boolean"}, "password": str}),
	"Token":        object(map[string]any{"id": integer, "user": str, "name": str, "prefix": str, "role": str, "created_at": str, "last_used_at": str, "revoked_at": str, "token": str}),
	"TokenPage":    object(map[string]any{"tokens": arrayOf(ref("Token")), "next_cursor": str}),
	"NewToken":     object(map[string]any{"name": str, "role": str, "user": str}, "name"),
	"Taint":        object(map[string]any{"reason": str}, "reason"),
}

var paramRe = regexp.MustCompile(`:([a-zA-Z_]+)`)

// OpenAPIPath turns echo's /a/:id into OpenAPI's /a/{id}.
func OpenAPIPath(p string) string { return paramRe.ReplaceAllString(p, "{$1}") }

// OpenAPI builds the document from apiDocs and the roles in routes.
func OpenAPI(routes []Route) map[string]any {
	roles := map[string]handlers.Role{}
	for _, r := range routes {
		roles[r.Method+" "+r.Path] = r.Role
	}
	keys := make([]string, 0, len(apiDocs))
	for k := range apiDocs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	paths := map[string]map[string]any{}
	for _, k := range keys {
		method, path, _ := strings.Cut(k, " ")
		role, ok := roles[k]
		if !ok {
			role = handlers.RoleAdmin // documented but not routed: the router test fails
		}
		op := apiDocs[k]
		var params []any
		for _, m := range paramRe.FindAllStringSubmatch(path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": str})
		}
		for _, q := range op.Query {
			p := map[string]any{"name": q, "in": "query", "schema": str}
			if q == "cursor" {
				p["description"] = "the next_cursor of the previous page (opaque); leave it out for the first page. Anything else is a 400 on cursor"
			}
			params = append(params, p)
		}
		if op.Idem {
			params = append(params, map[string]any{"name": "Idempotency-Key", "in": "header", "schema": str,
				"description": "the same key with the same body returns the same result; with a different body, 409"})
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
		if role == handlers.RolePublic {
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
