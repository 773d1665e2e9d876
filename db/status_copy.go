package db

import (
	"context"
	"errors"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jmoiron/sqlx"
)

// On PostgreSQL the status rows of a step's freshly built partitions (the
// bulk of what a large backfill writes) go in by COPY rather than by
// INSERT … VALUES statements of batchRows rows: the server neither parses
// nor plans a statement of hundreds of parameters per batch, and pgx sends
// the rows in the binary format while it encodes them. Measured on a
// 1,000,000-partition backfill: the status insert was 42 % of the server's
// time.

// txConns holds the pgx connection under each open PostgreSQL write
// transaction of Store.Tx (database/sql does not give a transaction's
// connection back), for copyConn.
var txConns sync.Map // *sqlx.Tx → pgConn

// pgConnOf is the driver connection of one of the store's PostgreSQL
// connections (false for another driver's).
func pgConnOf(conn *sqlx.Conn) (pgConn, bool) {
	var pc pgConn
	var ok bool
	_ = conn.Raw(func(dc any) error {
		pc, ok = dc.(pgConn)
		return nil
	})
	return pc, ok
}

// copyConn is the connection under tx, when tx is a PostgreSQL write
// transaction of Store.Tx.
func copyConn(tx *sqlx.Tx) (pgConn, bool) {
	if v, ok := txConns.Load(tx); ok {
		return v.(pgConn), true
	}
	return pgConn{}, false
}

// copyMinRows: fewer fresh rows than this go by the statement, whose one
// round trip costs less than COPY's savepoint and stream.
const copyMinRows = 32

// statusCopyColumns are the columns copyMaterialized fills; the others
// keep their defaults (NULL, or 0 for materialized's siblings).
var statusCopyColumns = []string{"asset_id", "partition_key", "idx", "status", "materialized",
	"last_mat_instance_id", "last_mat_run_id", "last_mat_at", "last_mat_code_version",
	"last_attempt_at", "last_attempt_status", "updated_at"}

// copyMaterialized inserts the status rows of items (materialized plainly,
// leased without a row) by COPY on pc, inside a savepoint of tx. It answers
// false, having written nothing, when one of the rows exists already (a
// report wrote it while the attempt ran): the caller then goes the
// statements' way, which tells those rows apart.
func copyMaterialized(ctx context.Context, tx *sqlx.Tx, pc pgConn, items []plainMat, assetID int64, code string, at int64) (bool, error) {
	if err := execLater(ctx, tx, `SAVEPOINT status_copy`); err != nil {
		return false, err
	}
	// The statements queued so far (the savepoint among them) go first.
	if err := pc.flush(ctx); err != nil {
		return false, err
	}
	row := make([]any, len(statusCopyColumns))
	n, err := pc.Conn.Conn().CopyFrom(ctx, pgx.Identifier{"partition_status"}, statusCopyColumns, pgx.CopyFromSlice(len(items), func(i int) ([]any, error) {
		it := items[i]
		row[0], row[1], row[2], row[3], row[4] = assetID, it.part.Key, it.part.Idx, StatusMaterialized, int64(1)
		row[5], row[6], row[7], row[8] = it.part.InstanceID, it.run, at, code
		row[9], row[10], row[11] = at, StatusMaterialized, at
		return row, nil
	}))
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation
			if _, err := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT status_copy`); err != nil {
				return false, err
			}
			return false, nil
		}
		return false, err
	}
	if int(n) != len(items) {
		return false, errors.New("COPY into partition_status wrote fewer rows than it was given")
	}
	if err := execLater(ctx, tx, `RELEASE SAVEPOINT status_copy`); err != nil {
		return false, err
	}
	return true, nil
}
