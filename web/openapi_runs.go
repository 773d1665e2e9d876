package web

import (
	"maps"

	"github.com/tessera-dev/tessera/handlers"
)

// The runs list (issue 24, item 6) in the OpenAPI document.
func init() {
	maps.Copy(apiDocs, map[string]apiOp{
		"GET /api/v1/runs": {Summary: "The chunk runs of every backfill (by hand, schedule or sensor), newest first by the time they were queued; filters as /runs takes them", Tag: "runs",
			Query: []string{"asset", "state", "backfill", "from", "to", "limit", "cursor"}, Result: "RunPage"},
	})
	listed := chunkProps()
	listed["backfill_title"] = described(str, "the title of the run's backfill (\"\" when it has none)")
	listed["launched_by"] = described(str, "who launched the backfill: a user, \"schedule:NAME\" or \"sensor:NAME\"")
	listed["duration_ms"] = described(nullable(integer), "how long the run ran: from its start to its end, or to now while it runs (null before it started)")
	maps.Copy(schemas, map[string]any{
		"ListedRun": object(listed, keys(listed)...),
		"RunPage":   object(map[string]any{"runs": arrayOf(ref("ListedRun")), "next_cursor": str}, "runs", "next_cursor"),
	})
}

// runsListParam documents the query parameters of GET /api/v1/runs (ok
// false for any other operation's).
func runsListParam(op, name string) (map[string]any, bool) {
	if op != "GET /api/v1/runs" {
		return nil, false
	}
	p := map[string]any{"name": name, "in": "query", "schema": str}
	switch name {
	case "limit":
		p["schema"] = map[string]any{"type": "integer", "minimum": 1, "maximum": handlers.MaxRunsPageLimit, "default": handlers.DefaultRunsPageLimit}
		p["description"] = "the most runs of this page"
	case "state":
		p["schema"] = arrayOf(enum(handlers.RunStates...))
		p["style"], p["explode"] = "form", false
		p["description"] = "only runs in these states, comma-separated"
	case "asset":
		p["description"] = "only runs of this asset (a 400 names the asset when the workspace has none so called)"
	case "backfill":
		p["description"] = "only runs of this backfill (its id; a 400 when there is none)"
	case "from":
		p["description"] = "only runs queued at or after this time: RFC 3339, \"2025-01-15 12:00\" (UTC), a date, or Unix milliseconds"
	case "to":
		p["description"] = "only runs queued before this time (after from), written as from"
	case "cursor":
		p["description"] = "the next_cursor of the previous page (opaque); leave it out for the first page. Anything else is a 400 on cursor"
	}
	return p, true
}
