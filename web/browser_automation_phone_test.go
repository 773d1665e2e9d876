package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// TestBrowserPhoneAutomationPages (issue 22 audit): at 390 px the
// Automation page, the Sensors page, a poll sensor's page with its run
// keys, a push sensor's page, a schedule's page and the backfill a run now
// launched all fit the window (a wide table scrolls inside its own box;
// the run keys table used to stretch the page to 457 px), and at either
// width the backfill says "by schedule NAME" (it read "byschedule").
func TestBrowserPhoneAutomationPages(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "eval.sh")
	if err := os.WriteFile(script, []byte(`#!/bin/sh
c=${TESSERA_SENSOR_CURSOR:-0}; n=$((c+1))
echo "{\"cursor\": \"$n\", \"run_requests\": [{\"partitions\": [\"eu\"], \"run_key\": \"landed-2026-11-25-files-batch-00$n\"}]}"
`), 0o755); err != nil {
		t.Fatal(err)
	}
	env := testkit.New(t, testkit.Options{WorkspaceYAML: fmt.Sprintf(`
assets:
  auto.regions:
    partitions: {static: [eu, us, ap]}
    executor: {demo: {duration: 1ms}}
schedules:
  auto.nightly:
    cron: "0 3 * * *"
    timezone: Europe/Berlin
    assets: [auto.regions]
sensors:
  crm.changed:
    assets: [auto.regions]
  files.landed:
    assets: [auto.regions]
    evaluator: {command: [%q]}
    interval: 24h
`, script)})
	env.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}})
	sched, sensors := env.StartScheduler(t), env.StartSensors(t)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := sensors.Evaluate(ctx, "files.landed", false, "alice"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := env.Handler.Engine.Push(ctx, "crm.changed", jobs.PushEvent{MessageID: "crm-4711", Partitions: []string{"eu", "us"}}, "alice"); err != nil {
		t.Fatal(err)
	}
	r, err := sched.Trigger(ctx, "auto.nightly", "alice")
	if err != nil || r.Backfill == nil {
		t.Fatalf("run now: %+v %v", r, err)
	}
	bctx := testkit.Browser(t)
	env.BrowserSignIn(t, bctx, auth.RoleAdmin)
	bf := "/backfills/" + r.Backfill.ID
	for _, w := range []int64{390, 1280} {
		for _, path := range []string{"/automation", "/sensors", "/sensors/files.landed", "/sensors/crm.changed", "/schedules/auto.nightly", bf} {
			at(t, bctx, env.URL+path, w)
			eval(t, bctx, fmt.Sprintf("%s at %d px", path, w), fitsScript)
		}
		testkit.Screenshot(t, bctx, fmt.Sprintf("automation-backfill-%d", w))
		eval(t, bctx, fmt.Sprintf("launched by, at %d px", w), `(() => {
  const t = document.querySelector('[data-testid="launched-by"]').innerText.replace(/\s+/g, " ");
  return t.includes("by schedule auto.nightly") ? "" : "launched-by reads " + JSON.stringify(t);
})()`)
	}
	at(t, bctx, env.URL+"/sensors/files.landed", 390)
	testkit.Screenshot(t, bctx, "phone-sensor-run-keys")
}
