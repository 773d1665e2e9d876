package db

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/jmoiron/sqlx"
)

// Persisted staleness facts (table staleness_blocks, migrations 15 and 16).
//
// The facts of an asset's status rows (baseFacts) are stored packed, one
// blob per block of 1<<staleBlockShift indexes, so that a full load (the
// first view after a start, or after an event of unknown effect) decodes a
// few thousand blobs instead of scanning every status row through the
// driver. The rule that keeps them exact:
//
//   - Every transaction that writes a status row marks the row's block in
//     the same transaction (markStaleBlocks): its facts become NULL and its
//     gen a new random number. The status write path does so through
//     rollupDelta.apply (every row it writes is counted in its rollupDelta,
//     with a zero delta when its status did not change), taints through
//     markStaleBlockOf, a reindex through markAssetStaleBlocks.
//   - A load reads a block's gen before its rows (loadBaseFacts), and the
//     facts encoded from those rows are stored only if gen is still the one
//     read (persistStaleBlocks, in the background): a write in between drew
//     a new gen, and the facts wait for the next load.
//
// So a block's stored facts are always those of its rows, and a block whose
// facts are NULL, missing or unreadable is read from its rows.

// staleBlockShift: a block holds the rows of 1<<staleBlockShift consecutive
// indexes (the rollup's blocks).
const staleBlockShift = RollupShift

// staleBlockFormat is the first byte of an encoded block.
const staleBlockFormat = 1

// markStaleBlocks marks the blocks blocks[i] = {asset id, block} as written
// in transaction tx: their stored facts NULL, a new gen. Whatever writes
// partition_status rows calls it (through rollupDelta.apply) in the same
// transaction.
func markStaleBlocks(ctx context.Context, tx *sqlx.Tx, blocks [][2]int64) error {
	if len(blocks) == 0 {
		return nil
	}
	args := make([]any, 0, 2*len(blocks))
	for _, b := range blocks {
		if b[1] >= 0 {
			args = append(args, b[0], b[1])
		}
	}
	return batchExec(ctx, tx, `INSERT INTO staleness_blocks (asset_id, block, gen) SELECT column1, column2, `+randomGen(dialectOf(tx))+` FROM (VALUES `, nil,
		`(?,?)`, `) WHERE true ON CONFLICT (asset_id, block) DO UPDATE SET gen=excluded.gen, facts=NULL`, 2, args)
}

// markStaleBlockOf marks the block of the status row of (asset, key).
func markStaleBlockOf(ctx context.Context, tx *sqlx.Tx, assetID int64, key string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO staleness_blocks (asset_id, block, gen)
		SELECT asset_id, idx >> ?, `+randomGen(dialectOf(tx))+` FROM partition_status WHERE asset_id=? AND partition_key=? AND idx >= 0
		ON CONFLICT (asset_id, block) DO UPDATE SET gen=excluded.gen, facts=NULL`, staleBlockShift, assetID, key)
	return err
}

// markAssetStaleBlocks marks every block of an asset, those its rows are in
// and those they were in (a reindex moves rows between blocks).
func markAssetStaleBlocks(ctx context.Context, tx *sqlx.Tx, assetID int64) error {
	gen := randomGen(dialectOf(tx))
	if _, err := tx.ExecContext(ctx, `UPDATE staleness_blocks SET gen=`+gen+`, facts=NULL WHERE asset_id=?`, assetID); err != nil {
		return err
	}
	// Each block once (PostgreSQL refuses an upsert that changes a row
	// twice).
	_, err := tx.ExecContext(ctx, `INSERT INTO staleness_blocks (asset_id, block, gen)
		SELECT asset_id, block, `+gen+` FROM (SELECT asset_id, idx >> ? AS block FROM partition_status WHERE asset_id=? AND idx >= 0
			UNION SELECT asset_id, block FROM status_ranges WHERE asset_id=?) AS b
		WHERE true ON CONFLICT (asset_id, block) DO UPDATE SET gen=excluded.gen, facts=NULL`, staleBlockShift, assetID, assetID)
	return err
}

// encodeBlock encodes rows [from, to) of b, all of one block: a format
// byte, the block's code versions, the row count, then per row the gap to
// the previous index, status and flags, the code version's number and the
// change of the materialization time (varints).
func encodeBlock(b *baseFacts, block int64, from, to int) []byte {
	codes := map[string]uint64{}
	var dict []string
	for j := from; j < to; j++ {
		if _, ok := codes[b.Code[j]]; !ok {
			codes[b.Code[j]] = uint64(len(dict))
			dict = append(dict, b.Code[j])
		}
	}
	out := make([]byte, 0, 16+8*(to-from))
	out = append(out, staleBlockFormat)
	out = binary.AppendUvarint(out, uint64(len(dict)))
	for _, c := range dict {
		out = binary.AppendUvarint(out, uint64(len(c)))
		out = append(out, c...)
	}
	out = binary.AppendUvarint(out, uint64(to-from))
	prev := block<<staleBlockShift - 1
	var prevAt int64
	for j := from; j < to; j++ {
		out = binary.AppendUvarint(out, uint64(b.Idx[j]-prev-1))
		prev = b.Idx[j]
		out = append(out, b.Status[j]|b.Flags[j]<<2)
		out = binary.AppendUvarint(out, codes[b.Code[j]])
		out = binary.AppendVarint(out, b.MatAt[j]-prevAt)
		prevAt = b.MatAt[j]
	}
	return out
}

var errBadBlock = errors.New("unreadable staleness block")

// decodeBlock appends the rows of an encoded block to b (code versions
// interned in intern); on an error b is unchanged.
func decodeBlock(data []byte, block int64, b *baseFacts, intern map[string]string) error {
	if len(data) == 0 || data[0] != staleBlockFormat {
		return errBadBlock
	}
	p := 1
	uv := func() uint64 {
		v, n := binary.Uvarint(data[p:])
		if n <= 0 {
			p = -1 << 30
			return 0
		}
		p += n
		return v
	}
	nd := uv()
	if p < 0 || nd > uint64(len(data)) {
		return errBadBlock
	}
	dict := make([]string, nd)
	for i := range dict {
		l := uv()
		if p < 0 || l > uint64(len(data)-p) {
			return errBadBlock
		}
		c, ok := intern[string(data[p:p+int(l)])]
		if !ok {
			c = string(data[p : p+int(l)])
			intern[c] = c
		}
		dict[i] = c
		p += int(l)
	}
	n := uv()
	if p < 0 || n > 1<<staleBlockShift {
		return errBadBlock
	}
	k := len(b.Idx)
	b.grow(int(n))
	prev := block<<staleBlockShift - 1
	var at int64
	for j := k; j < k+int(n); j++ {
		// Most gaps and code numbers take one byte: read those inline.
		if p+2 >= len(data) {
			b.truncate(k)
			return errBadBlock
		}
		gap := uint64(data[p])
		if gap < 0x80 {
			p++
		} else {
			var g int
			if gap, g = binary.Uvarint(data[p:]); g <= 0 || p+g+1 >= len(data) {
				b.truncate(k)
				return errBadBlock
			}
			p += g
		}
		sf := data[p]
		p++
		ci := uint64(data[p])
		if ci < 0x80 {
			p++
		} else {
			var c int
			if ci, c = binary.Uvarint(data[p:]); c <= 0 {
				b.truncate(k)
				return errBadBlock
			}
			p += c
		}
		d, m := binary.Varint(data[p:])
		if m <= 0 || ci >= nd || sf&3 > stInProgress {
			b.truncate(k)
			return errBadBlock
		}
		p += m
		prev += int64(gap) + 1
		at += d
		b.Idx[j], b.Status[j], b.Flags[j], b.MatAt[j], b.Code[j] = prev, sf&3, sf>>2, at, dict[ci]
	}
	if p != len(data) || (n > 0 && b.Idx[len(b.Idx)-1]>>staleBlockShift != block) {
		b.truncate(k)
		return errBadBlock
	}
	return nil
}

// grow extends b by n rows (zero until set).
func (b *baseFacts) grow(n int) {
	b.Idx = slices.Grow(b.Idx, n)[:len(b.Idx)+n]
	b.Status = slices.Grow(b.Status, n)[:len(b.Status)+n]
	b.Flags = slices.Grow(b.Flags, n)[:len(b.Flags)+n]
	b.MatAt = slices.Grow(b.MatAt, n)[:len(b.MatAt)+n]
	b.Code = slices.Grow(b.Code, n)[:len(b.Code)+n]
}

func (b *baseFacts) truncate(n int) {
	b.Idx, b.Status, b.Flags, b.MatAt, b.Code = b.Idx[:n], b.Status[:n], b.Flags[:n], b.MatAt[:n], b.Code[:n]
}

// staleBlockWrite is a block's facts to store if its gen is still gen.
type staleBlockWrite struct {
	asset, block, gen int64
	facts             []byte
}

// loadBaseFacts reads an asset's facts: the blocks whose facts are stored
// from staleness_blocks, the blocks marked since from their status rows
// (their facts then stored in the background). Every block with status
// rows has a row in staleness_blocks (the marks, and migration 16 for rows
// from before); as a check, the rows found must number what the rollup
// (kept in the same transactions) counts, less the leased partitions
// (statusRowCount), or every status row is read.
func (s *Store) loadBaseFacts(ctx context.Context, assetID int64, code string) (*baseFacts, *blockGens, error) {
	// The gens first, then the rows: see the rule at the top of the file.
	sb, err := s.readStaleBlocks(ctx, assetID, code)
	if err != nil {
		return nil, nil, err
	}
	s.staleCache().decoded.Add(int64(sb.covered))
	if sb.covered == 0 {
		rows, err := s.loadRows(ctx, assetID, code)
		if err != nil {
			return nil, nil, err
		}
		if len(sb.gens) > 0 {
			s.persistStaleBlocks(assetID, rows, sb.gens)
		}
		if int64(len(rows.Idx)) != sb.all.total {
			if sb.all.total >= 0 || len(rows.Idx) > 0 { // not an asset without rows and blocks
				s.staleCache().miscounted.Add(1)
			}
			return rows, nil, nil
		}
		return rows, &sb.all, nil
	}
	rest := &baseFacts{}
	if len(sb.gens) > 0 {
		blocks := slices.Sorted(maps.Keys(sb.gens))
		rs := make([][2]int64, 0, len(blocks))
		for _, b := range blocks {
			lo, hi := b<<staleBlockShift, (b+1)<<staleBlockShift-1
			if n := len(rs); n > 0 && rs[n-1][1]+1 == lo {
				rs[n-1][1] = hi
				continue
			}
			rs = append(rs, [2]int64{lo, hi})
		}
		if rest, err = s.loadRanges(ctx, assetID, code, rs); err != nil {
			return nil, nil, err
		}
	}
	if int64(len(sb.known.Idx)+len(rest.Idx)) != sb.all.total {
		// Rows written meanwhile, or a block never marked: the rows.
		s.staleCache().miscounted.Add(1)
		rows, err := s.loadRows(ctx, assetID, code)
		return rows, nil, err
	}
	if len(sb.gens) > 0 {
		s.persistStaleBlocks(assetID, rest, sb.gens)
	}
	return mergeFacts(sb.known, rest), &sb.all, nil
}

// statusRowCount is an SQL expression, the count of asset ?1's status rows
// in the key space (idx >= 0) from the rollup: the rollup counts the
// partitions running attempts lease without a row too (in progress, see
// attempt_leases.go), so those are taken off. Read in the same statement
// as the blocks, it is of the same moment.
func statusRowCount(d Dialect) string {
	leased := `json_array_length(lease, '$.k')`
	if d == Postgres {
		leased = `jsonb_array_length(CAST(lease AS jsonb) -> 'k')`
	}
	return `((SELECT COALESCE(SUM(n), 0) FROM partition_rollup WHERE asset_id=?1)
	- (SELECT COALESCE(SUM(` + leased + `), 0) FROM attempts WHERE state='running' AND asset_id=?1 AND lease IS NOT NULL))`
}

// blockGens are the gens of an asset's stored blocks (block -> gen) and
// the count of its rows (statusRowCount), read in one snapshot: while they
// are the same, no status row of the asset was written.
type blockGens struct {
	gens  map[int64]int64
	total int64
}

// unchangedSince reports whether the asset's blocks still have the gens
// g (and its rows the count), that is, whether none of its status rows was
// written since g was read.
func (s *Store) unchangedSince(ctx context.Context, assetID int64, g *blockGens) bool {
	rows, err := s.r.QueryContext(ctx, `SELECT `+statusRowCount(s.dialect)+`, block, gen
		FROM staleness_blocks WHERE asset_id=?1 AND block >= 0`, assetID)
	if err != nil {
		return false
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var total, block, gen int64
		if err := rows.Scan(&total, &block, &gen); err != nil || total != g.total {
			return false
		}
		if was, ok := g.gens[block]; !ok || was != gen {
			return false
		}
		n++
	}
	return rows.Err() == nil && n == len(g.gens)
}

// storedBlocks is what readStaleBlocks read of an asset's stored blocks:
// the rows of those it decoded (known; covered blocks), the gens of the
// others (block -> gen), and the rollup's count of the asset's rows.
type storedBlocks struct {
	known   *baseFacts
	covered int
	gens    map[int64]int64 // of the blocks not decoded
	all     blockGens       // every block's gen, the rollup's count
}

// readStaleBlocks decodes the stored blocks of an asset.
func (s *Store) readStaleBlocks(ctx context.Context, assetID int64, code string) (*storedBlocks, error) {
	// One statement, one snapshot: the rollup's count (a scalar subquery,
	// computed once) and the blocks.
	rows, err := s.r.QueryContext(ctx, `SELECT `+statusRowCount(s.dialect)+`, block, gen, facts
		FROM staleness_blocks WHERE asset_id=?1 AND block >= 0 ORDER BY block`, assetID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	sb := &storedBlocks{known: &baseFacts{}, gens: map[int64]int64{}, all: blockGens{gens: map[int64]int64{}, total: -1}}
	intern := map[string]string{code: code}
	var block, gen, total int64
	var facts sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&total, &block, &gen, &facts); err != nil {
			return nil, err
		}
		if sb.all.total < 0 {
			sb.all.total = total
			sb.known.grow(int(total))
			sb.known.truncate(0)
		}
		sb.all.gens[block] = gen
		if facts != nil && decodeBlock(facts, block, sb.known, intern) == nil {
			sb.covered++
			continue
		}
		sb.gens[block] = gen
	}
	return sb, rows.Err()
}

// mergeFacts merges two sets of rows with disjoint indexes, each in order.
func mergeFacts(a, b *baseFacts) *baseFacts {
	if len(b.Idx) == 0 {
		return a
	}
	out := newBaseFacts(len(a.Idx) + len(b.Idx))
	i, j := 0, 0
	for i < len(a.Idx) || j < len(b.Idx) {
		if j == len(b.Idx) || (i < len(a.Idx) && a.Idx[i] < b.Idx[j]) {
			out.add(a, i)
			i++
		} else {
			out.add(b, j)
			j++
		}
	}
	return out
}

// loadRanges reads the facts of the rows with index in the sorted ranges
// rs, through the covering staleness index (one seek per range, a few
// thousand ranges per query).
func (s *Store) loadRanges(ctx context.Context, assetID int64, code string, rs [][2]int64) (*baseFacts, error) {
	var b *baseFacts
	// The rows and the status ranges in one snapshot (loadRange).
	err := s.snapshot(ctx, func(q *sqlx.Conn) error {
		var err error
		b, err = s.loadRangesIn(ctx, q, assetID, code, rs)
		return err
	})
	return b, err
}

// loadRangesIn is loadRanges' reads, on q.
func (s *Store) loadRangesIn(ctx context.Context, q *sqlx.Conn, assetID int64, code string, rs [][2]int64) (*baseFacts, error) {
	b := &baseFacts{}
	intern := map[string]string{code: code}
	for start := 0; start < len(rs); start += patchRangesPerQuery {
		part := rs[start:min(start+patchRangesPerQuery, len(rs))]
		js := jsonRanges(part)
		from, within := rangesJoin(s.dialect)
		rows, err := q.QueryContext(ctx, `SELECT ps.idx * 32 + ps.materialized + (CASE WHEN ps.tainted_at IS NOT NULL THEN 2 ELSE 0 END)
				+ (CASE ps.status WHEN 'failed' THEN 4 WHEN 'in_progress' THEN 8 ELSE 0 END),
				COALESCE(ps.last_mat_at, 0), COALESCE(ps.last_mat_code_version, '')
			FROM `+from+`
			WHERE ps.asset_id = ? AND `+within, js, assetID)
		if err != nil {
			return nil, err
		}
		if err := scanFacts(rows, b, intern); err != nil {
			return nil, err
		}
	}
	if !slices.IsSorted(b.Idx) {
		sortFacts(b)
	}
	if s.betweenReads != nil {
		s.betweenReads()
	}
	return withRangeFacts(ctx, q, b, assetID, rs)
}

// jsonRanges writes ranges as a JSON array of [lo, hi] pairs.
func jsonRanges(rs [][2]int64) string {
	buf := make([]byte, 0, 24*len(rs)+2)
	buf = append(buf, '[')
	for i, r := range rs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = fmt.Appendf(buf, "[%d,%d]", r[0], r[1])
	}
	return string(append(buf, ']'))
}

// scanFacts reads rows of (packed, at, code) into b and closes them.
func scanFacts(rows *sql.Rows, b *baseFacts, intern map[string]string) error {
	defer rows.Close()
	var packed, at int64
	var cv sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&packed, &at, &cv); err != nil {
			return err
		}
		c, ok := intern[string(cv)]
		if !ok {
			c = string(cv)
			intern[c] = c
		}
		b.push(packed, at, c)
	}
	return rows.Err()
}

// persistStaleBlocks encodes the blocks of gens (block -> gen read before
// rows) from rows, and stores them in the background if their gen is
// unchanged.
func (s *Store) persistStaleBlocks(assetID int64, rows *baseFacts, gens map[int64]int64) {
	var ws []staleBlockWrite
	j := 0
	for _, b := range slices.Sorted(maps.Keys(gens)) {
		for j < len(rows.Idx) && rows.Idx[j]>>staleBlockShift < b {
			j++
		}
		k := j
		for k < len(rows.Idx) && rows.Idx[k]>>staleBlockShift == b {
			k++
		}
		ws = append(ws, staleBlockWrite{asset: assetID, block: b, gen: gens[b], facts: encodeBlock(rows, b, j, k)})
		j = k
	}
	s.staleCache().persist.add(s, ws)
}

// stalePersister stores encoded blocks in the background, on the writer, in
// small transactions (a write of the engine waits for one at most).
type stalePersister struct {
	mu      sync.Mutex
	pending []staleBlockWrite
	running bool
	wg      sync.WaitGroup
	stored  atomic.Int64 // blocks stored (tests)
}

// persistBatch is how many blocks one transaction stores.
const persistBatch = 64

func (p *stalePersister) add(s *Store, ws []staleBlockWrite) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending = append(p.pending, ws...)
	if p.running {
		return
	}
	p.running = true
	p.wg.Add(1)
	go p.run(s)
}

func (p *stalePersister) run(s *Store) {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		n := min(len(p.pending), persistBatch)
		batch := p.pending[:n:n]
		p.pending = p.pending[n:]
		if n == 0 {
			p.pending, p.running = nil, false
		}
		p.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-s.closed:
			continue // drop the rest
		default:
		}
		if s.writesRefused() {
			continue
		}
		if k, err := s.storeBlocks(batch); err == nil {
			p.stored.Add(k)
		}
	}
}

// storeBlocks stores each block's facts if its gen is unchanged, in one
// transaction; it returns how many it stored. Failures are left to the next
// load (nothing depends on them), and not counted in WriteHealth.
func (s *Store) storeBlocks(ws []staleBlockWrite) (int64, error) {
	// The background persister's own context: not a read's, though a
	// page's full load queued the blocks.
	ctx := context.Background()
	tx, err := s.writer(ctx).BeginTxx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: nothing to roll back
	var n int64
	for _, w := range ws {
		res, err := tx.ExecContext(ctx, `UPDATE staleness_blocks SET facts=? WHERE asset_id=? AND block=? AND gen=? AND facts IS NULL`, w.facts, w.asset, w.block, w.gen)
		if err != nil {
			return 0, err
		}
		k, _ := res.RowsAffected()
		n += k
	}
	return n, tx.Commit()
}

// waitPersisted waits for the background stores of blocks (Close, tests).
func (s *Store) waitPersisted() {
	if c, ok := caches.Load(s); ok {
		c.(*staleCache).persist.wg.Wait()
	}
}

// blocks returns the blocks of the rows added to r, in order.
func (r rollupDelta) blocks() [][2]int64 {
	out := make([][2]int64, 0, len(r))
	for k := range r {
		out = append(out, [2]int64{k.asset, k.block})
	}
	slices.SortFunc(out, func(a, b [2]int64) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
	return slices.Compact(out)
}
