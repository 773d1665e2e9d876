package handlers

import (
	"net/url"

	"github.com/tessera-dev/tessera/jobs"
)

// sensorAPIHint words the sensors' hints for an API client.
func sensorAPIHint(kind string, p map[string]string) string {
	path := "/api/v1/sensors/" + url.PathEscape(p["sensor"])
	if kind == HintSensorList {
		return "GET /api/v1/sensors lists them"
	}
	switch sensorHintCase(p) {
	case "resume":
		return "POST " + path + "/resume resumes it"
	case "enable":
		return "set enabled: true on the sensor in the workspace file and reload it"
	case "push":
		return "send it events with POST " + path + "/events"
	case "evaluate":
		return "POST " + path + "/evaluate evaluates it now; events go to a push sensor (one without an evaluator)"
	case "wait":
		return "GET " + path + "/evaluations shows it when it is done"
	}
	return "nothing to do"
}

// sensorPageHint words them for a page.
func sensorPageHint(kind string, p map[string]string) string {
	if kind == HintSensorList {
		return "the Sensors page lists them"
	}
	switch sensorHintCase(p) {
	case "resume":
		return "use Resume to resume it"
	case "enable":
		return "set enabled: true on the sensor in the workspace file and reload it"
	case "push":
		return "it launches backfills when events are pushed to it"
	case "evaluate":
		return "use Evaluate now"
	case "wait":
		return "reload the page when it is done"
	}
	return "nothing to do"
}

// sensorHintCase is what to do about a sensor in the state a request
// found it in: resume a paused one, enable a disabled one, push to a push
// sensor asked to evaluate, evaluate a poll sensor sent an event, wait for an evaluation under way.
func sensorHintCase(p map[string]string) string {
	switch {
	case p["code"] == jobs.CodeNotPollSensor:
		return "push"
	case p["code"] == jobs.CodeNotPushSensor:
		return "evaluate"
	case p["state"] == "paused":
		return "resume"
	case p["state"] == "disabled in the workspace":
		return "enable"
	case p["state"] == "evaluating":
		return "wait"
	}
	return ""
}
