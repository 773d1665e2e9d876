package jobs

import (
	"context"
	"time"
)

// every calls f each period until ctx ends (the first call a period after
// the start): the loop of the engine's background work that keeps time
// with a ticker alone (the heartbeat and lease, live log tails, the workspace check, the sensors'
// polling).
func every(ctx context.Context, period time.Duration, f func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f()
	}
}
