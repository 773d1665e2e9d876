package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// The documented schemas of the schedule answers (list, one, ticks,
// preview, pause, resume, run now) describe what the handlers answer, key
// by key: a schedule never seen, one with launched and skipped ticks, a
// preview that launches and one that skips.
func TestOpenAPIScheduleSchemasMatchAnswers(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{WorkspaceYAML: testkit.Assets(
		testkit.Asset("s.hourly", `{hourly: {start: "2026-01-01-00:00"}}`),
		testkit.Asset("s.feeds", "{dynamic: feeds}"),
	) + `schedules:
  hourly:
    cron: "5 * * * *"
    timezone: America/New_York
    assets: [s.hourly]
    missing_within: 2h
  feeds:
    cron: "@daily"
    assets: [s.feeds]
`})
	env.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}})
	sched := env.StartScheduler(t)
	_, answer := apiAnswerer(t, env.URL, env.Token(t, auth.RoleOperator))
	answer("GET", "/api/v1/schedules", "/api/v1/schedules", "") // never evaluated: nulls
	t0 := time.Date(2026, 3, 1, 0, 30, 0, 0, time.UTC)
	sched.Evaluate(context.Background(), t0)
	sched.Evaluate(context.Background(), t0.Add(4*time.Hour))
	answer("GET", "/api/v1/schedules", "/api/v1/schedules", "")
	answer("GET", "/api/v1/schedules/hourly", "/api/v1/schedules/{name}", "")
	answer("GET", "/api/v1/schedules/hourly/ticks?limit=2", "/api/v1/schedules/{name}/ticks", "")
	answer("GET", "/api/v1/schedules/hourly/preview", "/api/v1/schedules/{name}/preview", "")
	if pv := answer("GET", "/api/v1/schedules/feeds/preview", "/api/v1/schedules/{name}/preview", ""); pv["preview"] != nil || pv["skip_reason"] == "" {
		t.Errorf("a dynamic set without keys: %v", pv)
	}
	answer("POST", "/api/v1/schedules/hourly/pause", "/api/v1/schedules/{name}/pause", "")
	answer("POST", "/api/v1/schedules/hourly/trigger", "/api/v1/schedules/{name}/trigger", "")
	if r := answer("POST", "/api/v1/schedules/feeds/trigger", "/api/v1/schedules/{name}/trigger", ""); r["backfill"] != nil {
		t.Errorf("a run now that launches nothing: %v", r)
	}
	answer("POST", "/api/v1/schedules/hourly/resume", "/api/v1/schedules/{name}/resume", "")
	answer("GET", "/api/v1/schedules/feeds/ticks?outcome=skipped", "/api/v1/schedules/{name}/ticks", "")
}
