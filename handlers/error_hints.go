package handlers

import (
	"fmt"
	"net/url"
	"strings"
)

// Hint kinds: where a user looks next after an error. The API, the pages
// and the CLI each word them (apiHint, pageHint here; the CLI in
// cli/api_errors.go), from the same value: nothing rewrites another
// layer's sentence.
const (
	HintAssetList           = "asset_list"
	HintAssetPartitions     = "asset_partitions" // params: asset
	HintBackfillList        = "backfill_list"
	HintRunList             = "run_list"
	HintRereadBackfill      = "reread_backfill" // params: backfill, state
	HintExpectedVersion     = "expected_version"
	HintUserList            = "user_list"
	HintTokenList           = "token_list"
	HintEmptyKeys           = "empty_keys"           // params: example
	HintIdempotencyConflict = "idempotency_conflict" // params: what ("request" or "batch")
	HintScheduleList        = "schedule_list"        // params: schedule, known
	HintScheduleState       = "schedule_state"       // params: schedule, state (paused or running)
	HintSensorList          = "sensor_list"          // params: sensor, known
	HintSensorState         = "sensor_state"         // params: sensor, state, code (sensorStateHint)
)

// apiHint words hint kind for an API client: the endpoint or field to use.
func apiHint(kind string, p map[string]string) string {
	switch kind {
	case HintAssetList:
		return "GET /api/v1/assets lists the declared assets"
	case HintAssetPartitions:
		return fmt.Sprintf("GET /api/v1/assets/%s/partitions lists its partitions", url.PathEscape(p["asset"]))
	case HintBackfillList:
		return "list backfills with GET /api/v1/backfills"
	case HintRunList:
		return "a backfill's runs are the chunks listed by GET /api/v1/backfills/{id}/chunks (each chunk's id is its run id; list backfills with GET /api/v1/backfills)"
	case HintRereadBackfill:
		return fmt.Sprintf("GET /api/v1/backfills/%s and, if the action still applies, send its state_version", p["backfill"])
	case HintExpectedVersion:
		return "send the state_version you last saw"
	case HintUserList:
		return "GET /api/v1/users lists the accounts (their id field)"
	case HintTokenList:
		return "GET /api/v1/tokens lists your tokens (their id field)"
	case HintEmptyKeys:
		return `give at least one partition key in selector.keys` + p["example"] +
			`, or select partitions by range ({"type": "range", "start": ..., "end": ...}) or by status ({"type": "filter", "statuses": ["missing"]})`
	case HintIdempotencyConflict:
		if p["what"] == "batch" {
			return "send a new Idempotency-Key for a new batch, or repeat the original batch unchanged to get its answer again"
		}
		return "send a new Idempotency-Key for a new request, or repeat the original body unchanged to get that backfill again"
	case HintScheduleList:
		return "GET /api/v1/schedules lists them"
	case HintScheduleState:
		return scheduleStateHint(p, "POST /api/v1/schedules/"+url.PathEscape(p["schedule"])+"/resume resumes it", "nothing to do")
	case HintSensorList, HintSensorState:
		return sensorAPIHint(kind, p)
	}
	return ""
}

// pageHint words hint kind for a browser: the page to open or what to do
// on it ("" when the page itself is the way on).
func pageHint(kind string, p map[string]string) string {
	switch kind {
	case HintAssetList:
		return "the Assets page lists the declared assets"
	case HintAssetPartitions:
		return "the asset's page shows its partitions"
	case HintBackfillList:
		return "the Backfills page lists every backfill"
	case HintRunList:
		return "a backfill's page lists its runs"
	case HintRereadBackfill:
		return "reload the page to see the current state and, if the action still applies, try again"
	case HintExpectedVersion:
		return "reload the page and try again"
	case HintUserList:
		return "the Users page lists the accounts"
	case HintTokenList:
		return "the API tokens page lists your tokens"
	case HintEmptyKeys:
		return "give at least one partition key, or choose a range or a status filter"
	case HintIdempotencyConflict:
		return "reload the form to send a new request"
	case HintScheduleList:
		return "the Automation page lists them"
	case HintScheduleState:
		return scheduleStateHint(p, "use Resume to resume it", "nothing to do")
	case HintSensorList, HintSensorState:
		return sensorPageHint(kind, p)
	}
	return ""
}

// withHint completes ue from its reason and hint: Message in the API's
// words, Page (unless already set) in a page's.
func withHint(ue *UserError, reason, kind string, params map[string]string) *UserError {
	ue.Reason, ue.Hint, ue.Params = reason, kind, params
	ue.Message = joinHint(reason, apiHint(kind, params))
	if ue.Page == "" {
		ue.Page = joinHint(reason, pageHint(kind, params))
	}
	return ue
}

func joinHint(reason, hint string) string {
	if hint == "" {
		return reason
	}
	return strings.TrimRight(reason, ". ") + "; " + hint
}

// scheduleStateHint is what to do about a schedule already in the state
// asked for: resume a paused one; a running one needs nothing.
func scheduleStateHint(p map[string]string, resume, running string) string {
	if p["state"] == "paused" {
		return resume
	}
	return running
}
