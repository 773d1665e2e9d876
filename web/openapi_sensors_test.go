package web_test

import (
	"fmt"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// The documented schemas of the sensors API describe what its handlers
// answer, key by key: push and poll sensors, before and after events,
// evaluations (dry run, launched, failed), run keys, pause, resume and a
// cursor reset.
func TestOpenAPISensorSchemasMatchAnswers(t *testing.T) {
	t.Parallel()
	script := testkit.Script(t, "eval.sh", `echo "log line" >&2
echo '{"cursor": "c1", "run_requests": [{"partitions": ["eu"], "run_key": "k1"}, {"start": "eu", "end": "us"}], "skip_reason": "partly"}'
`)
	env := testkit.New(t, testkit.Options{WorkspaceYAML: fmt.Sprintf(`
assets:
  t.regions:
    partitions: {static: [eu, us, ap]}
    executor: {demo: {duration: 1ms}}
sensors:
  arrivals:
    assets: [t.regions]
  poller:
    assets: [t.regions]
    evaluator: {command: [%q]}
    interval: 1h
  failing:
    assets: [t.regions]
    evaluator: {command: [sh, -c, "exit 1"]}
`, script)})
	env.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}})
	env.StartSensors(t)
	_, answer := apiAnswerer(t, env.URL, env.Token(t, auth.RoleOperator))
	_, adminAnswer := apiAnswerer(t, env.URL, env.Token(t, auth.RoleAdmin))

	answer("GET", "/api/v1/sensors", "/api/v1/sensors", "")
	answer("POST", "/api/v1/sensors/arrivals/events", "/api/v1/sensors/{name}/events", `{"message_id": "m-1", "partitions": ["eu"]}`)
	answer("POST", "/api/v1/sensors/poller/evaluate", "/api/v1/sensors/{name}/evaluate", `{"dry_run": true}`)
	answer("POST", "/api/v1/sensors/poller/evaluate", "/api/v1/sensors/{name}/evaluate", "")
	answer("POST", "/api/v1/sensors/failing/evaluate", "/api/v1/sensors/{name}/evaluate", "")
	answer("GET", "/api/v1/sensors", "/api/v1/sensors", "")
	answer("GET", "/api/v1/sensors/arrivals", "/api/v1/sensors/{name}", "")
	answer("GET", "/api/v1/sensors/failing", "/api/v1/sensors/{name}", "")
	answer("GET", "/api/v1/sensors/arrivals/events", "/api/v1/sensors/{name}/events", "")
	evs := answer("GET", "/api/v1/sensors/poller/evaluations", "/api/v1/sensors/{name}/evaluations", "")
	if n := len(evs["evaluations"].([]any)); n != 2 {
		t.Fatalf("%d evaluations", n)
	}
	answer("GET", "/api/v1/sensors/poller/run-keys?prefix=k", "/api/v1/sensors/{name}/run-keys", "")
	answer("POST", "/api/v1/sensors/poller/pause", "/api/v1/sensors/{name}/pause", "")
	answer("GET", "/api/v1/sensors/poller", "/api/v1/sensors/{name}", "")
	answer("POST", "/api/v1/sensors/poller/resume", "/api/v1/sensors/{name}/resume", "")
	adminAnswer("POST", "/api/v1/sensors/poller/cursor", "/api/v1/sensors/{name}/cursor", `{"cursor": null}`)
	answer("GET", "/api/v1/sensors/poller/evaluations", "/api/v1/sensors/{name}/evaluations", "")
}
