package web

import (
	"maps"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/handlers"
)

// The schedules API (issue 22) in the OpenAPI document.
func init() {
	maps.Copy(apiDocs, map[string]apiOp{
		"GET /api/v1/schedules":                {Summary: "Every schedule of the workspace: definition, state, last tick and next 5 ticks (UTC and its time zone)", Tag: "schedules", Result: "ScheduleList"},
		"GET /api/v1/schedules/:name":          {Summary: "One schedule", Tag: "schedules", Result: "Schedule"},
		"GET /api/v1/schedules/:name/ticks":    {Summary: "A schedule's ticks, newest first (?outcome= only those outcomes)", Tag: "schedules", Query: []string{"outcome", "limit", "cursor"}, Result: "TickPage"},
		"GET /api/v1/schedules/:name/preview":  {Summary: "What the schedule's next tick would launch (writes nothing), or why it would launch nothing", Tag: "schedules", Result: "TickPreview"},
		"POST /api/v1/schedules/:name/pause":   {Summary: "Pause a schedule: its ticks are recorded as skipped (paused) and never launched after a resume; 409 when already paused", Tag: "schedules", Body: "Empty", OptionalBody: true, Result: "Schedule"},
		"POST /api/v1/schedules/:name/resume":  {Summary: "Resume a paused schedule (the ticks that fell while it was paused stay skipped); 409 when not paused", Tag: "schedules", Body: "Empty", OptionalBody: true, Result: "Schedule"},
		"POST /api/v1/schedules/:name/trigger": {Summary: "Run a schedule now (paused or not): a manual tick {schedule}:manual:{id} (between two ticks, when no window closed since the last one, it builds what that tick targeted); 201 with the tick and its backfill (null when it launched nothing: the tick's outcome and reason say why)", Tag: "schedules", Body: "Empty", OptionalBody: true, Result: "TriggerResult", Status: "201"},
	})
	tick := allRequired(map[string]any{"id": described(str, "{schedule}:{scheduled_for unix seconds}, or {schedule}:manual:{id} for a run now: the idempotency key of its backfill"),
		"schedule": str, "scheduled_for": timeStr,
		"scheduled_for_local": described(str, "scheduled_for in the schedule's time zone (RFC 3339 with its offset)"),
		"evaluated_at":        timeStr, "outcome": enum(handlers.TickOutcomes...),
		"reason":          described(nullable(str), "why a tick was skipped, queued or failed (null when launched)"),
		"definition_hash": described(str, "the schedule's definition when the tick was evaluated"),
		"backfill_id":     nullable(str), "manual": boolean, "actor": str})
	next := object(map[string]any{"at": timeStr, "local": described(str, "in the schedule's time zone, RFC 3339 with its offset"), "zone": described(str, "the zone's abbreviation then")}, "at", "local", "zone")
	state := allRequired(map[string]any{"paused": boolean, "paused_by": nullable(str), "paused_at": nullable(timeStr),
		"evaluated_until":  described(nullable(timeStr), "every scheduled tick up to this instant has been evaluated (null before the scheduler first saw the schedule: it owes nothing before then)"),
		"last_backfill_id": nullable(str), "ticks_launched": integer, "ticks_skipped": integer, "ticks_failed": integer,
		"pruned_ticks":  described(integer, "ticks evaluated longer ago than the retention, deleted (the counts above keep them)"),
		"state_version": integer})
	schedule := object(map[string]any{"name": str, "cron": described(str, "5 fields, or 6 with seconds first, or a descriptor such as @daily"),
		"timezone": described(str, "IANA name (UTC when the workspace leaves it out)"), "assets": arrayOf(str),
		"target":         enum(catalog.TargetClosedWindows, catalog.TargetMissingWithin, catalog.TargetAll),
		"missing_within": described(str, "target missing_within: the trailing window (absent otherwise)"),
		"chunk_size":     integer, "max_concurrent_runs": integer, "priority": priorityProp, "overlap": enum(catalog.Overlaps...),
		"catchup":         object(map[string]any{"window": str, "max_ticks": integer}, "window", "max_ticks"),
		"enabled":         boolean,
		"definition_hash": str, "state": ref("ScheduleState"), "last_tick": nullableRef("Tick"),
		"retention":  described(str, "how long ticks are kept (serve --automation-retention), e.g. 90d"),
		"next_ticks": described(arrayOf(next), "the next 5 ticks (none while the schedule is disabled)")})
	req := keys(schedule["properties"].(map[string]any))
	schedule["required"] = req[:0:0]
	for _, k := range req {
		if k != "missing_within" {
			schedule["required"] = append(schedule["required"].([]string), k)
		}
	}
	maps.Copy(schemas, map[string]any{
		"Tick":          tick,
		"ScheduleState": state,
		"Schedule":      schedule,
		"ScheduleList":  object(map[string]any{"schedules": arrayOf(ref("Schedule"))}, "schedules"),
		"TickPage":      object(map[string]any{"schedule": str, "ticks": arrayOf(ref("Tick")), "next_cursor": str}, "schedule", "ticks", "next_cursor"),
		"TickPreview": object(map[string]any{"schedule": str, "tick_at": described(nullable(timeStr), "the next tick (null when the cron never fires again)"),
			"tick_at_local": nullable(str), "request": described(nullableRef("BackfillRequest"), "the backfill the tick would create (null when it would launch nothing)"),
			"preview":     nullableRef("Preview"),
			"skip_reason": described(str, "why it would launch nothing (\"\" when it launches)"),
			"note":        described(str, "present when the schedule is paused or disabled: the tick would be skipped for that")},
			"schedule", "tick_at", "tick_at_local", "request", "preview", "skip_reason"),
		"TriggerResult": object(map[string]any{"tick": ref("Tick"), "backfill": described(nullableRef("Backfill"), "null when the tick launched nothing (its outcome and reason say why)")}, "tick", "backfill"),
	})
}
