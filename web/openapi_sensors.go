package web

import (
	"maps"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
)

// The sensors API (issue 22) in the OpenAPI document.
func init() {
	maps.Copy(apiDocs, map[string]apiOp{
		"GET /api/v1/sensors":                   {Summary: "Every sensor of the workspace: definition (push, or poll with its evaluator's kind, interval and timeout) and state (paused, ok or error with the last error, cursor, counts, last and next evaluation)", Tag: "sensors", Result: "SensorList"},
		"GET /api/v1/sensors/:name":             {Summary: "One sensor", Tag: "sensors", Result: "Sensor"},
		"GET /api/v1/sensors/:name/evaluations": {Summary: "A poll sensor's evaluations, dry runs and cursor resets, newest first, with their requests, error and log tail", Tag: "sensors", Query: []string{"limit", "cursor"}, Result: "SensorEvaluationPage"},
		"GET /api/v1/sensors/:name/events":      {Summary: "The events pushed to a sensor (each message_id once, with its first outcome), newest first", Tag: "sensors", Query: []string{"limit", "cursor"}, Result: "SensorEventPage"},
		"GET /api/v1/sensors/:name/run-keys":    {Summary: "The run keys a poll sensor launched (each at most once, ever), in key order; ?prefix= searches them", Tag: "sensors", Query: []string{"prefix", "after", "limit"}, Result: "SensorRunKeyPage"},
		"POST /api/v1/sensors/:name/events": {Summary: "Push an event: 201 with the backfill it launched; the same message_id again (also after a restart) answers 200 with the first outcome and launches nothing. " +
			"Least role operator: give a pipeline an API token of that role. 409 while the sensor is paused or disabled (nothing recorded: send it again later), and for a poll sensor (it takes no events)", Tag: "sensors", Body: "SensorEvent", Result: "PushResult", Status: "201"},
		"POST /api/v1/sensors/:name/evaluate": {Summary: "Evaluate a poll sensor now; {\"dry_run\": true} shows what it would request (with a preview of each backfill) without launching or moving the cursor. 409 for a push sensor or while an evaluation runs", Tag: "sensors", Body: "Evaluate", OptionalBody: true, Result: "EvaluationResult"},
		"POST /api/v1/sensors/:name/pause":    {Summary: "Pause a sensor: not evaluated, pushed events refused (409) until resumed; 409 when already paused", Tag: "sensors", Body: "Empty", OptionalBody: true, Result: "Sensor"},
		"POST /api/v1/sensors/:name/resume":   {Summary: "Resume a paused sensor; 409 when not paused", Tag: "sensors", Body: "Empty", OptionalBody: true, Result: "Sensor"},
		"POST /api/v1/sensors/:name/cursor":   {Summary: "Set a sensor's cursor (admin): {\"cursor\": \"VALUE\"} or {\"cursor\": null}; recorded as an evaluation of kind reset, and an evaluation under way then launches nothing; 409 for a push sensor (it has no cursor)", Tag: "sensors", Body: "SensorCursor", Result: "Sensor"},
	})
	nstr := nullable(str)
	event := allRequired(map[string]any{"sensor": str, "message_id": str, "received_at": timeStr, "outcome": enum(db.EventLaunched, db.EventSkipped),
		"reason": nstr, "backfill_id": nstr, "actor": described(str, "who pushed it")})
	event["properties"].(map[string]any)["pruned"] = described(boolean, "true: the event is older than the retention; only its message id and first outcome are kept (reason null, actor empty), so it still answers as a duplicate (absent otherwise)")
	state := allRequired(map[string]any{"paused": boolean, "paused_by": nstr, "paused_at": nullable(timeStr),
		"status":     enum(db.SensorOK, db.SensorError),
		"last_error": described(nstr, "the last failed evaluation's error while status is error"),
		"failures":   described(integer, "failed evaluations in a row (the backoff doubles the interval with each)"),
		"cursor":     described(nstr, "the poll evaluator's position, as it last answered it"), "state_version": integer,
		"last_evaluated_at": nullable(timeStr), "next_evaluation_at": nullable(timeStr),
		"events_accepted": integer, "launches": integer, "evaluations": integer,
		"pruned_evaluations": described(integer, "evaluations, dry runs and resets older than the retention, deleted"),
		"pruned_events":      described(integer, "pushed events older than the retention, deleted (their message ids are kept: they still answer as duplicates)")})
	sensor := allRequired(map[string]any{"name": str, "kind": enum(handlers.SensorPush, handlers.SensorPoll), "assets": arrayOf(str),
		"evaluator": described(nullable(object(map[string]any{"kind": enum(catalog.ExecutorCommand, catalog.ExecutorHTTP), "interval": str, "timeout": str}, "kind", "interval", "timeout")),
			"null for a push sensor"),
		"chunk_size": integer, "max_concurrent_runs": integer, "priority": priorityProp, "enabled": boolean,
		"retention": described(str, "how long evaluations and events are kept (serve --automation-retention), e.g. 90d"),
		"state":     ref("SensorState"), "last_event": described(nullableRef("SensorEventRecord"), "the newest pushed event (null: none, or a poll sensor)")})
	eval := allRequired(map[string]any{"id": integer, "sensor": str, "kind": enum(db.EvalEvaluation, db.EvalDryRun, db.EvalReset), "started_at": timeStr,
		"duration_ms": integer, "cursor_before": nstr, "cursor_after": nstr,
		"requests":    described(arrayOf(ref("RunRequestOutcome")), "the run requests the evaluator answered, with what became of each"),
		"skip_reason": nstr, "error": nstr, "log_tail": described(nstr, "the end of a command's stderr, or of an endpoint's error answer"), "actor": str})
	outcome := object(map[string]any{"assets": arrayOf(str), "partitions": arrayOf(str), "start": str, "end": str, "run_key": str,
		"backfill": described(str, "the backfill it launched"), "skipped": described(str, "why it launched nothing (its run key was used)"),
		"preview": described(ref("Preview"), "a dry run: what the backfill would do; read back from the evaluations, its estimate has the words the evaluate answer gave")})
	maps.Copy(schemas, map[string]any{
		"SensorEventRecord": event,
		"SensorState":       state,
		"Sensor":            sensor,
		"SensorEvaluation":  eval,
		"RunRequestOutcome": outcome,
		"SensorList":        object(map[string]any{"sensors": arrayOf(ref("Sensor"))}, "sensors"),
		"SensorEvaluationPage": object(map[string]any{"sensor": str, "evaluations": arrayOf(ref("SensorEvaluation")), "next_cursor": str},
			"sensor", "evaluations", "next_cursor"),
		"SensorEventPage": object(map[string]any{"sensor": str, "events": arrayOf(ref("SensorEventRecord")), "next_cursor": str}, "sensor", "events", "next_cursor"),
		"SensorRunKeyPage": object(map[string]any{"sensor": str, "run_keys": arrayOf(object(map[string]any{"run_key": str, "backfill_id": str, "created_at": timeStr},
			"run_key", "backfill_id", "created_at")), "next_after": described(str, "pass as ?after= for the next page (\"\" on the last)")}, "sensor", "run_keys", "next_after"),
		"SensorEvent": object(map[string]any{
			"message_id": described(str, "required, at most 200 bytes: the event's unique id; sending it again launches nothing"),
			"assets":     described(arrayOf(str), "some of the sensor's assets (left out: all of them; an empty list is a 400)"),
			"partitions": described(arrayOf(str), "the partition keys the event concerns (or start and end)"),
			"start":      rangeBound("start", "first"), "end": rangeBound("end", "last")}, "message_id"),
		"PushResult": object(map[string]any{"event": ref("SensorEventRecord"), "replayed": described(boolean, "true: the message_id was sent before; this is its first outcome"),
			"backfill": nullableRef("Backfill")}, "event", "replayed", "backfill"),
		"Evaluate":         object(map[string]any{"dry_run": boolean}),
		"Empty":            object(map[string]any{}),
		"SensorCursor":     object(map[string]any{"cursor": described(nstr, "the new cursor, or null to clear it")}, "cursor"),
		"EvaluationResult": object(map[string]any{"evaluation": ref("SensorEvaluation"), "requests": arrayOf(ref("RunRequestOutcome"))}, "evaluation", "requests"),
	})
}
