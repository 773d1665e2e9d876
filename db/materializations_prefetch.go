package db

import (
	"context"
	"strings"

	"github.com/jmoiron/sqlx"
)

// A batch of reported items reads, for each item, the partition's status
// row and whether its instance was recorded before, then writes both: on
// PostgreSQL each statement is a round trip, and the demo's history (19,446
// partitions) took 15 s to seed on an idle machine and over 4 minutes on a
// loaded one. prefetchIngest reads the rows and instances of a batch's
// items in a few statements instead; an item then reads its own only when
// the prefetch cannot answer for it (see ok and ingest.record).

// partKey names one partition of one asset.
type partKey struct {
	asset int64
	key   string
}

// ingestPrefetch is what prefetchIngest read of a batch.
type ingestPrefetch struct {
	// ok: the assets whose items' reads were prefetched: those with no
	// status range (which a report turns into rows first). An item whose
	// partition an item before it in the batch wrote (a failure, then the
	// success of its retry) reads its own (written).
	ok        map[int64]bool
	written   map[partKey]bool
	status    map[partKey]PartitionStatus
	instances map[partKey]map[string]string // instance id -> status
}

// prefetchBatch is how many partitions one prefetch statement names.
const prefetchBatch = 400

// prefetchIngest reads the status rows and recorded instances of items'
// partitions, asset by asset (assets with a single item are left to it).
func prefetchIngest(ctx context.Context, tx *sqlx.Tx, items []Materialization) (*ingestPrefetch, error) {
	p := &ingestPrefetch{ok: map[int64]bool{}, written: map[partKey]bool{}, status: map[partKey]PartitionStatus{}, instances: map[partKey]map[string]string{}}
	byAsset := map[int64][]Materialization{}
	seen := make(map[partKey]bool, len(items))
	for _, m := range items {
		k := partKey{m.AssetID, m.Partition}
		if !seen[k] {
			seen[k] = true
			byAsset[m.AssetID] = append(byAsset[m.AssetID], m)
		}
	}
	for asset, ms := range byAsset {
		if len(ms) < 2 {
			continue
		}
		var ranged int
		if err := tx.GetContext(ctx, &ranged, `SELECT COUNT(*) FROM (SELECT 1 FROM status_ranges WHERE asset_id=? LIMIT 1) r`, asset); err != nil {
			return nil, err
		}
		if ranged > 0 {
			continue
		}
		for lo := 0; lo < len(ms); lo += prefetchBatch {
			if err := p.read(ctx, tx, asset, ms[lo:min(lo+prefetchBatch, len(ms))]); err != nil {
				return nil, err
			}
		}
		p.ok[asset] = true
	}
	return p, nil
}

// read reads the status rows of ms's partitions and their instances of
// either id a report of theirs may have (InstanceID, ReportInstanceID).
func (p *ingestPrefetch) read(ctx context.Context, tx *sqlx.Tx, asset int64, ms []Materialization) error {
	keys := make([]any, 0, len(ms)+1)
	keys = append(keys, asset)
	ids := make([]any, 0, 2*len(ms))
	for _, m := range ms {
		keys = append(keys, m.Partition)
		ids = append(ids, InstanceID(m.RunID, m.AssetKey, m.Partition), ReportInstanceID(m.RunID, m.AssetKey, m.Partition))
	}
	in := func(n int) string { return `(?` + strings.Repeat(",?", n-1) + `)` }
	var rows []PartitionStatus
	if err := tx.SelectContext(ctx, &rows, `SELECT * FROM partition_status WHERE asset_id=? AND partition_key IN `+in(len(ms)), keys...); err != nil {
		return err
	}
	for _, r := range fillAll(rows) {
		p.status[partKey{asset, r.Key}] = r
	}
	var insts []struct {
		Key    string `db:"partition_key"`
		ID     string `db:"id"`
		Status string `db:"status"`
	}
	if err := tx.SelectContext(ctx, &insts, `SELECT partition_key, id, status FROM partition_instances WHERE asset_id=? AND partition_key IN `+in(len(ms))+
		` AND id IN `+in(len(ids)), append(keys, ids...)...); err != nil {
		return err
	}
	for _, r := range insts {
		k := partKey{asset, r.Key}
		if p.instances[k] == nil {
			p.instances[k] = map[string]string{}
		}
		p.instances[k][r.ID] = r.Status
	}
	return nil
}

// statusOf is the prefetched status row of m's partition and whether it has
// one; ok is false when the prefetch does not answer for it (its asset was
// not prefetched, or an item before it wrote the partition). It notes that
// m's item writes the partition.
func (p *ingestPrefetch) statusOf(m Materialization) (row PartitionStatus, exists, ok bool) {
	if p == nil {
		return row, false, false
	}
	k := partKey{m.AssetID, m.Partition}
	before := p.written[k]
	p.written[k] = true
	if !p.ok[m.AssetID] || before {
		return row, false, false
	}
	row, exists = p.status[k]
	return row, exists, true
}

// instanceOf is the prefetched status of instance id of m's partition and
// whether it was recorded.
func (p *ingestPrefetch) instanceOf(m Materialization, id string) (status string, found bool) {
	status, found = p.instances[partKey{m.AssetID, m.Partition}][id]
	return status, found
}
