// Package db is Tessera's store and the only place that holds SQL: SQLite
// through sqlx, embedded numbered migrations, one writer connection and a
// pool of readers (WAL). Every command runs in one transaction that appends
// its event and updates the projections; Rebuild replays the engine's
// events into fresh projections.
//
// One file per entity or concern (backfills, runs, partitions, staleness,
// users, sessions, tokens, sign-in attempts, ...). It knows nothing of HTTP
// or wording: errors are values (ErrNotFound, *NotFoundError, ...).
//
// postgres*.go and status_copy.go are PostgreSQL's side of the same SQL:
// placeholders rebound, statements planned for their arguments, a step's
// unread writes queued into one batch (postgres_pipeline.go), fresh status
// rows by COPY.
//
// Partition statuses live in three forms that every reader merges:
// partition_status rows, leases of running attempts on partitions without a
// row (attempt_leases.go), and status ranges of attempts that built such
// partitions plainly (status_ranges.go).
//
// move*.go move a SQLite database into an empty PostgreSQL one (tessera
// migrate --from --to): the tables from both catalogs, one transaction,
// refusals as *MoveError.
//
// Other packages ask in domain terms (Store methods, and functions taking a
// Tx or Querier for the engine's transaction); TestSQLLivesInDB fails on an
// SQL string literal in a non-test Go file outside db/.
package db
