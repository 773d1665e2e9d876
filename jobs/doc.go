// Package jobs runs work in the background: the backfill engine (create,
// preview, steer), its controller loop (plan chunks where slots are free,
// finish attempts), the dispatcher and the executors (command, http, demo).
// The demo history seeder lives in package demo.
//
// Several instances (tessera serve processes) may share one PostgreSQL
// database. Their controllers' steps are serialized (db.LockSteps) and
// read what the earlier steps committed, so each chunk is planned once and
// each attempt started and finished by one instance; a step finishes only
// an attempt still running under the owner it expects (finishCompleted).
// Pool caps and throttles and each backfill's max_concurrent_runs count
// every instance's attempts (pools.go); MaxConcurrentRuns is each
// instance's slots. The schedules and the poll sensors run on the holder
// of a lease (leader.go). An instance that dies is taken over once its
// heartbeat is older than the lease TTL (recoverExpired); one that cannot
// heartbeat stops its attempts itself (fenceIfExpired), and one whose
// attempts another recorded cancels them (cancelLost).
//
// It speaks to the store in domain terms and never knows HTTP: no request,
// no status code, no wording for a page or a terminal.
package jobs
