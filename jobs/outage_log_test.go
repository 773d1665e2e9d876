package jobs

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/testkit/logbuf"
	"github.com/tessera-dev/tessera/testkit/pgtest"
	"github.com/tessera-dev/tessera/testkit/poll"
)

// TestOutageWarnsOncePerSpell (issue 23 audit): while PostgreSQL is down,
// an instance that heartbeats every 50 ms and compares its workspace
// every second says once that it cannot ask for the schedules' lease and
// once that it cannot compare its workspace (before, once a second each,
// on every instance), says it lost the lease because it could not renew
// it (not that another holds it), and says each works again once the
// server is back.
func TestOutageWarnsOncePerSpell(t *testing.T) {
	t.Parallel()
	k := pgtest.NewCluster(t)
	a := newTestEnvAt(t, k.URL(t), sleepyWS, Options{Heartbeat: 50 * time.Millisecond})
	var logged logbuf.Buffer
	a.eng.Log = slog.New(slog.NewTextHandler(&logged, nil))
	ctx, cancel := context.WithCancel(context.Background())
	links := make(chan struct{})
	go func() { a.eng.RunInstanceLinks(ctx); close(links) }()
	t.Cleanup(func() { cancel(); <-links })
	a.start()
	poll.Eventually(t, 20*time.Second, "the instance to lead", a.eng.Leading)

	k.Stop(t)
	said := func(s string) func() bool { return func() bool { return strings.Contains(logged.String(), s) } }
	poll.Eventually(t, 30*time.Second, "the lease warning", said("ask for the schedules' lease: failed"))
	poll.Eventually(t, 30*time.Second, "the workspace warning", said("workspace not compared with the other instances'"))
	// A sleep: that nothing more is said shows only as time passing (about
	// 40 failed heartbeats and asks, two failed comparisons).
	time.Sleep(2 * time.Second)
	k.Start(t)
	poll.Eventually(t, 60*time.Second, "the lease to be asked for again", said("the schedules' lease is asked for again"))
	poll.Eventually(t, 60*time.Second, "the workspace to be compared again", said("workspace compared with the other instances' again"))

	log := logged.String()
	for what, want := range map[string]int{
		"ask for the schedules' lease: failed":             1,
		"workspace not compared with the other instances'": 1,
		"it could not renew their lease":                   1,
		"another holds their lease":                        0,
	} {
		if n := strings.Count(log, what); n != want {
			t.Errorf("%q said %d times during one outage, want %d; the log:\n%s", what, n, want, log)
		}
	}
}
