package cli

import (
	"context"
	"log/slog"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/jobs"
)

// launchDemoBackfills launches, on a freshly seeded demo, one backfill of
// every partition of each asset whose demo executor has fail_keys, so the
// dashboard shows a backfill that ends with final failures (those keys
// fail every attempt its retries allow) within a minute, and Retry failed
// recovers it. The idempotency key makes a second start launch nothing.
func launchDemoBackfills(ctx context.Context, eng *jobs.Engine, ws *catalog.Workspace, log *slog.Logger) {
	for _, a := range ws.Assets {
		if a.Executor.Demo == nil || len(a.Executor.Demo.FailKeys) == 0 {
			continue
		}
		req := jobs.NewRequest()
		req.Assets = []string{a.Key}
		req.Selector = jobs.Selector{Type: "range"}
		req.Title = "Demo: every partition of " + a.Key
		c, err := eng.Create(ctx, req, "demo-seed:"+a.Key, "system")
		if err != nil {
			log.Warn("demo backfill not launched", "asset", a.Key, "err", err)
			continue
		}
		log.Info("launched a demo backfill whose fail_keys fail", "asset", a.Key, "backfill", c.Backfill.ID, "fail_keys", a.Executor.Demo.FailKeys)
	}
}
