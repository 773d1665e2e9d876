package db

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"
)

// A backfill's explicit keys are stored by blocks of KeyBlock, one row a
// block holding a JSON array of its keys (migration 23): a million-key
// backfill writes a thousand rows, not a million, and its create takes a
// fraction of the time. Block b holds the keys at positions
// b*KeyBlock … b*KeyBlock+KeyBlock-1 of the list.

// KeyBlock is how many keys one row of backfill_key_blocks holds.
const KeyBlock = 1024

// keyBlocksAStatement is how many blocks one INSERT writes.
const keyBlocksAStatement = 64

func insertKeyBlocks(ctx context.Context, tx *sqlx.Tx, backfillID string, keys []string) error {
	var q strings.Builder
	var args []any
	var buf []byte
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		_, err := tx.ExecContext(ctx, q.String(), args...)
		q.Reset()
		args = args[:0]
		return err
	}
	for lo, block := 0, 0; lo < len(keys); lo, block = lo+KeyBlock, block+1 {
		if len(args) == 0 {
			q.WriteString(`INSERT INTO backfill_key_blocks (backfill_id, block, keys) VALUES (?,?,?)`)
		} else {
			q.WriteString(`,(?,?,?)`)
		}
		buf = append(AppendJSONStrings(append(buf[:0], '['), keys[lo:min(lo+KeyBlock, len(keys))]), ']')
		args = append(args, backfillID, block, string(buf))
		if len(args) == 3*keyBlocksAStatement {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// KeyBlocks returns blocks b0 … b1 of backfill backfillID's explicit keys,
// by block number.
func KeyBlocks(ctx context.Context, q getter, backfillID string, b0, b1 int64) (map[int64][]string, error) {
	type row struct {
		Block int64  `db:"block"`
		Keys  string `db:"keys"`
	}
	rows, err := selectAll[row](ctx, q, `SELECT block, keys FROM backfill_key_blocks WHERE backfill_id=? AND block BETWEEN ? AND ? ORDER BY block`, backfillID, b0, b1)
	if err != nil {
		return nil, err
	}
	out := make(map[int64][]string, len(rows))
	for _, r := range rows {
		var keys []string
		if err := json.Unmarshal([]byte(r.Keys), &keys); err != nil {
			return nil, fmt.Errorf("backfill %s: keys block %d: %w", backfillID, r.Block, err)
		}
		out[r.Block] = keys
	}
	return out, nil
}

// BackfillKeys returns explicit keys n in [p0, p1).
func BackfillKeys(ctx context.Context, q getter, backfillID string, p0, p1 int64) ([]string, error) {
	if p1 <= p0 {
		return nil, nil
	}
	blocks, err := KeyBlocks(ctx, q, backfillID, p0/KeyBlock, (p1-1)/KeyBlock)
	if err != nil {
		return nil, err
	}
	return KeysIn(blocks, p0, p1), nil
}

// KeysIn cuts keys n in [p0, p1) out of blocks (as KeyBlocks returns
// them); it stops at the first block missing.
func KeysIn(blocks map[int64][]string, p0, p1 int64) []string {
	out := make([]string, 0, p1-p0)
	for n := p0; n < p1; {
		b := blocks[n/KeyBlock]
		off := n % KeyBlock
		if off >= int64(len(b)) {
			break
		}
		take := min(int64(len(b))-off, p1-n)
		out = append(out, b[off:off+take]...)
		n += take
	}
	return out
}
