package jobs

import (
	"context"
	"sync"

	"github.com/tessera-dev/tessera/db"
)

// RunInstanceLinks keeps this instance in touch with the others sharing
// its PostgreSQL store until ctx ends: live pages follow the changes made
// anywhere (broker_relay.go), the output of the command attempts running
// here is kept in the store for the others' run pages (livelog.go), and
// the workspace is compared with the other instances' (workspace_check.go).
// On SQLite (one instance) it returns at once.
func (e *Engine) RunInstanceLinks(ctx context.Context) {
	if e.Store.Dialect() != db.Postgres {
		return
	}
	r := newRelay(e.Store, e.broker, e.owner, e.Log)
	e.broker.mu.Lock()
	e.broker.relay = r
	e.broker.mu.Unlock()
	defer func() {
		e.broker.mu.Lock()
		e.broker.relay = nil
		e.broker.mu.Unlock()
	}()
	var wg sync.WaitGroup
	for _, f := range []func(context.Context){r.notify, r.receive, e.keepLiveTails, e.watchWorkspaces} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(ctx)
		}()
	}
	wg.Wait()
}

// Owner is this instance's worker id (the owner of the attempts it runs).
func (e *Engine) Owner() string { return e.owner }
