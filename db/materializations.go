package db

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base32"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// Materialization is one reported outcome of building an asset partition,
// already validated against the asset's partition scheme (Idx is the
// partition's index in the asset's space).
type Materialization struct {
	AssetID     int64
	AssetKey    string
	Partition   string
	Idx         int64
	Status      string // StatusMaterialized or StatusFailed
	CodeVersion string
	Metadata    json.RawMessage
	Error       string
	RunID       string
	Source      string // "api", "seed", "backfill", ...
	StartedAt   time.Time
	At          time.Time
}

// InstanceID derives a partition instance's id from (run id, asset, partition):
// the same run reporting the same partition again is the same instance.
//
// The id is clustered: its first 7 bytes hash (run id, asset) only, its last
// 8 bytes hash the whole triple. All instances of one run attempt therefore
// share an 11-character prefix and sit next to each other in the id index,
// so a chunk of 100 partitions touches a couple of index pages instead of
// 100 random ones.
func InstanceID(runID, asset, partition string) string {
	return InstanceIDs(runID, asset)(partition)
}

// InstanceIDs returns InstanceID for one (run id, asset) and any partition,
// hashing the shared prefix once: an attempt derives the ids of all of its
// partitions with it.
func InstanceIDs(runID, asset string) func(partition string) string {
	h1 := sha256.Sum256([]byte(runID + "\x00" + asset))
	prefix := runID + "\x00" + asset + "\x00"
	return func(partition string) string {
		// One allocation per id (the id itself): the hashed text in a
		// buffer on the stack when it fits, the id encoded in place.
		var buf [160]byte
		h2 := sha256.Sum256(append(append(buf[:0], prefix...), partition...))
		var b [15]byte
		copy(b[:7], h1[:7])
		copy(b[7:], h2[:8])
		var id [3 + 24]byte
		copy(id[:], "pi_")
		instanceEnc.Encode(id[3:], b[:])
		return string(id[:])
	}
}

// instanceEnc is base32 (RFC 4648) in lower case, unpadded: 15 bytes are
// 24 characters.
var instanceEnc = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// RecordResult says what a batch of materializations changed.
type RecordResult struct {
	Recorded  int      `json:"recorded"`
	Replayed  int      `json:"replayed"`
	Instances []string `json:"instance_ids"`
}

// RecordMaterializations records a batch in one transaction: an immutable
// partition instance per item, the partition status projection, the rollup
// counts, the asset's last materialization time and one event per asset.
// A non-empty idemKey makes the whole batch idempotent.
func (s *Store) RecordMaterializations(ctx context.Context, items []Materialization, actor, idemKey string, now time.Time) (RecordResult, error) {
	return s.RecordMaterializationsOnce(ctx, items, actor, Idempotency{Key: idemKey}, now)
}

// Idempotency makes a request a no-op when repeated: Key is the client's
// Idempotency-Key (scoped to the actor), Fingerprint a digest of the request
// as sent; the same key with another fingerprint is ErrIdempotencyConflict.
type Idempotency struct {
	Key, Fingerprint string
}

// RecordMaterializationsOnce is RecordMaterializations with an idempotency
// fingerprint: a repeated request answers what the first one recorded.
func (s *Store) RecordMaterializationsOnce(ctx context.Context, items []Materialization, actor string, idem Idempotency, now time.Time) (RecordResult, error) {
	var res RecordResult
	err := s.Tx(ctx, func(tx *sqlx.Tx) error {
		// Several instances on one PostgreSQL database: the batch waits
		// for the other instances' controller steps and they for it, so
		// that no attempt of theirs writes a partition's row or status
		// range between the batch's reads of its partitions (read at once
		// at its start: prefetchIngest) and its writes. On SQLite the one
		// writer already does this.
		if err := LockSteps(ctx, tx); err != nil {
			return err
		}
		var err error
		res, err = recordMaterializationsTx(ctx, tx, items, actor, idem, now)
		return err
	})
	if err == nil && res.Instances == nil {
		// Nothing new recorded (every item replayed, or a replayed batch
		// whose first answer recorded nothing): an empty list, not null.
		res.Instances = []string{}
	}
	return res, err
}

// ingestEvent is the payload of a materializations.batch event: what a
// repeated request with its Idempotency-Key is answered.
type ingestEvent struct {
	Items       int      `json:"items"`
	Fingerprint string   `json:"fingerprint,omitempty"`
	Instances   []string `json:"instance_ids"`
}

type reportedItem struct {
	Partition   string          `json:"partition"`
	Status      string          `json:"status"`
	InstanceID  string          `json:"instance_id"`
	RunID       string          `json:"run_id"`
	CodeVersion string          `json:"code_version,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	Error       string          `json:"error,omitempty"`
	At          int64           `json:"at"`
}

func recordMaterializationsTx(ctx context.Context, tx *sqlx.Tx, items []Materialization, actor string, idem Idempotency, now time.Time) (RecordResult, error) {
	var res RecordResult
	eventKey := ""
	if idem.Key != "" {
		eventKey = "ingest:" + actor + "\x1f" + idem.Key
		first, found, err := ingestedBefore(ctx, tx, eventKey)
		if err != nil {
			return res, err
		}
		if found {
			if first.Fingerprint != idem.Fingerprint {
				return res, ErrIdempotencyConflict
			}
			res.Replayed, res.Instances = len(items), first.Instances
			return res, nil
		}
	}
	in := &ingest{roll: rollupDelta{}, lastMat: map[int64]int64{}, lastAttempt: lastAttempts{}, perAsset: map[string][]reportedItem{}}
	pre, err := prefetchIngest(ctx, tx, items)
	if err != nil {
		return res, err
	}
	in.pre = pre
	for _, m := range items {
		if err := in.record(ctx, tx, &res, m, now); err != nil {
			return res, err
		}
	}
	if err := in.flush(ctx, tx, actor, now); err != nil {
		return res, err
	}
	if eventKey != "" {
		ev := ingestEvent{Items: len(items), Fingerprint: idem.Fingerprint, Instances: res.Instances}
		if _, err := AppendEvent(ctx, tx, "materializations.batch", "ingest", actor, ev, eventKey, now); err != nil {
			return res, err
		}
	}
	return res, nil
}

// ingestedBefore reads the batch first recorded under the idempotency event
// key eventKey; found is false when there is none.
func ingestedBefore(ctx context.Context, tx *sqlx.Tx, eventKey string) (first ingestEvent, found bool, err error) {
	var payload string
	err = tx.GetContext(ctx, &payload, `SELECT payload FROM events WHERE idempotency_key=?`, eventKey)
	switch {
	case err == nil:
		if err := json.Unmarshal([]byte(payload), &first); err != nil {
			return first, false, err
		}
		return first, true, nil
	case !errors.Is(err, sql.ErrNoRows):
		return first, false, err
	}
	return first, false, nil
}

// ingest is what recordMaterializationsTx gathers across a batch's items to
// write once, at the end.
type ingest struct {
	roll        rollupDelta
	lastMat     map[int64]int64
	lastAttempt lastAttempts
	perAsset    map[string][]reportedItem
	assetOrder  []string
	// leased: per asset, the partitions running attempts lease without a
	// status row (read once per batch).
	leased map[int64]map[string]bool
	pre    *ingestPrefetch // the items' rows and instances, read at once
}

// unlease turns an attempt's lease on a reported partition that has no
// status row into the in-progress row it stands for (takeLease), so that
// the report applies over it as over any leased row. It says whether it
// did (the row then is not the prefetched one).
func (in *ingest) unlease(ctx context.Context, tx *sqlx.Tx, assetID int64, key string) (bool, error) {
	if in.leased == nil {
		in.leased = map[int64]map[string]bool{}
	}
	keys, ok := in.leased[assetID]
	if !ok {
		ls, err := allLeases(ctx, tx, assetID)
		if err != nil {
			return false, err
		}
		keys = make(map[string]bool, len(ls))
		for _, l := range ls {
			keys[l.Key] = true
		}
		in.leased[assetID] = keys
	}
	if !keys[key] {
		return false, nil
	}
	delete(keys, key)
	return true, takeLease(ctx, tx, assetID, key)
}

// record records one reported item: its instance (res.Replayed counts it
// when that instance was recorded before) and, unless the partition has
// had a later attempt, its status row.
func (in *ingest) record(ctx context.Context, tx *sqlx.Tx, res *RecordResult, m Materialization, now time.Time) error {
	id := InstanceID(m.RunID, m.AssetKey, m.Partition)
	at := Millis(m.At)
	var meta *string
	if len(m.Metadata) > 0 && string(m.Metadata) != "null" {
		s := string(m.Metadata)
		meta = &s
	}
	took, err := in.unlease(ctx, tx, m.AssetID, m.Partition)
	if err != nil {
		return err
	}
	prev, exists, prefetched := in.pre.statusOf(m)
	if took {
		prefetched = false // the lease became a row
	}
	if !prefetched {
		if err := explodeStatusRangesByKey(ctx, tx, m.AssetID, m.Partition); err != nil {
			return err
		}
		prev = PartitionStatus{}
		err := tx.GetContext(ctx, &prev, `SELECT * FROM partition_status WHERE asset_id=? AND partition_key=?`, m.AssetID, m.Partition)
		exists = err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		prev.fill()
	}
	if exists && prev.Status == StatusInProgress && prev.LeaseInstanceID != nil && *prev.LeaseInstanceID == id {
		// The run building the partition reports it under its own run
		// id (a command calling tessera report --run-id
		// $TESSERA_RUN_ID): its attempt records its own instance, with
		// that id, when it ends; the report is an instance of its own.
		id = ReportInstanceID(m.RunID, m.AssetKey, m.Partition)
	}
	old := func() (string, error) {
		if prefetched {
			if st, found := in.pre.instanceOf(m, id); found {
				return st, nil
			}
			return "", sql.ErrNoRows
		}
		var st string
		err := tx.GetContext(ctx, &st, `SELECT status FROM partition_instances WHERE asset_id=? AND partition_key=? AND id=?`, m.AssetID, m.Partition, id)
		return st, err
	}
	replayed, err := writeReportedInstance(ctx, tx, m, id, at, meta, prev, exists, old)
	if err != nil {
		return err
	}
	if replayed {
		res.Replayed++
		return nil
	}
	res.Recorded++
	res.Instances = append(res.Instances, id)
	if _, ok := in.perAsset[m.AssetKey]; !ok {
		in.assetOrder = append(in.assetOrder, m.AssetKey)
	}
	in.perAsset[m.AssetKey] = append(in.perAsset[m.AssetKey], reportedItem{m.Partition, m.Status, id, m.RunID, m.CodeVersion, m.Metadata, m.Error, at})

	// A report older than the partition's last attempt is kept as history
	// but does not move the projection backwards.
	if exists && prev.LastAttemptAt != nil && *prev.LastAttemptAt > at {
		return nil
	}
	in.lastAttempt.add(m.AssetID, at, m.Status)
	if m.Status == StatusMaterialized {
		if at > in.lastMat[m.AssetID] {
			in.lastMat[m.AssetID] = at
		}
	}
	if err := upsertReportedStatus(ctx, tx, m, id, at, meta, now); err != nil {
		return err
	}
	if exists && prev.Status == StatusInProgress && prev.LeaseInstanceID != nil {
		in.roll.add(m.AssetID, prev.Idx, prev.Status, 0) // the row changed, its status did not
		return nil                                       // still in progress: its lease holds (leasedStatus)
	}
	if exists {
		in.roll.add(m.AssetID, prev.Idx, prev.Status, -1)
	}
	in.roll.add(m.AssetID, m.Idx, m.Status, 1)
	return nil
}

// writeReportedInstance records the instance id of a reported item, at its
// time at, over prev (the partition's status row, when it exists): it
// finishes the instance when it is in progress, inserts it when new, and
// reports replayed, writing nothing, when it was recorded finished before.
// old reads the instance's status as recorded (sql.ErrNoRows: none).
func writeReportedInstance(ctx context.Context, tx *sqlx.Tx, m Materialization, id string, at int64, meta *string, prev PartitionStatus, exists bool, old func() (string, error)) (replayed bool, err error) {
	oldInstanceStatus, err := old()
	switch {
	case err == nil && oldInstanceStatus != StatusInProgress:
		return true, nil
	case err == nil:
		if _, err := tx.ExecContext(ctx, `UPDATE instance_rows SET status=?, code_version=?, metadata=?, error=?, finished_at=?
			WHERE asset_id=? AND partition_key=? AND id=?`, m.Status, m.CodeVersion, meta, nullIfEmpty(m.Error), at, m.AssetID, m.Partition, id); err != nil {
			return false, err
		}
	case errors.Is(err, sql.ErrNoRows):
		var supersedes *string
		// A report older than the current build is history: it does not
		// supersede what came after it.
		if m.Status == StatusMaterialized && exists && (prev.LastMatAt == nil || *prev.LastMatAt <= at) {
			supersedes = prev.CanonicalInstanceID
		}
		started := at
		if !m.StartedAt.IsZero() {
			started = Millis(m.StartedAt)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO instance_rows (id, asset_id, partition_key, run_id, status, code_version, metadata, error, source, started_at, finished_at, supersedes_id, created_at)
			VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`, id, m.AssetID, m.Partition, m.RunID, m.Status, m.CodeVersion, meta, nullIfEmpty(m.Error), m.Source, started, at, supersedes, at); err != nil {
			return false, err
		}
	default:
		return false, err
	}
	return false, nil
}

// upsertReportedStatus writes a reported item's status row, as its last
// materialization (materialized) or its last attempt, unless the engine
// leases the partition (leasedStatus).
func upsertReportedStatus(ctx context.Context, tx *sqlx.Tx, m Materialization, id string, at int64, meta *string, now time.Time) error {
	var err error
	if m.Status == StatusMaterialized {
		_, err = tx.ExecContext(ctx, `INSERT INTO partition_status (asset_id, partition_key, idx, status, materialized,
				last_mat_instance_id, last_mat_run_id, last_mat_at, last_mat_code_version, last_mat_metadata,
				last_attempt_instance_id, last_attempt_run_id, last_attempt_at, last_attempt_status, last_attempt_error,
				tainted_at, taint_reason, updated_at)
			VALUES (?,?,?,?,1, ?,?,?,?,?, NULL,NULL,?,?,NULL, NULL,NULL,?)
			ON CONFLICT (asset_id, partition_key) DO UPDATE SET `+leasedStatus+`, materialized=1,
				last_mat_instance_id=excluded.last_mat_instance_id, last_mat_run_id=excluded.last_mat_run_id, last_mat_at=excluded.last_mat_at,
				last_mat_code_version=excluded.last_mat_code_version, last_mat_metadata=excluded.last_mat_metadata,
				last_attempt_instance_id=NULL, last_attempt_run_id=NULL,
				last_attempt_at=excluded.last_attempt_at, last_attempt_status=excluded.last_attempt_status, last_attempt_error=NULL,
				tainted_at=NULL, taint_reason=NULL, updated_at=excluded.updated_at`,
			m.AssetID, m.Partition, m.Idx, StatusMaterialized, id, m.RunID, at, m.CodeVersion, meta, at, m.Status, Millis(now))
	} else {
		_, err = tx.ExecContext(ctx, `INSERT INTO partition_status (asset_id, partition_key, idx, status, materialized,
				last_attempt_instance_id, last_attempt_run_id, last_attempt_at, last_attempt_status, last_attempt_error, updated_at)
			VALUES (?,?,?,?,0, ?,?,?,?,?,?)
			ON CONFLICT (asset_id, partition_key) DO UPDATE SET `+leasedStatus+`,
				last_attempt_instance_id=excluded.last_attempt_instance_id, last_attempt_run_id=excluded.last_attempt_run_id,
				last_attempt_at=excluded.last_attempt_at, last_attempt_status=excluded.last_attempt_status,
				last_attempt_error=excluded.last_attempt_error, updated_at=excluded.updated_at`,
			m.AssetID, m.Partition, m.Idx, m.Status, id, m.RunID, at, m.Status, nullIfEmpty(m.Error), Millis(now))
	}
	return err
}

// flush writes what the batch gathered: the status rollups, the assets'
// last materialization and last attempt, and a partitions.reported event
// per asset, in the order the assets first came.
func (in *ingest) flush(ctx context.Context, tx *sqlx.Tx, actor string, now time.Time) error {
	if err := in.roll.apply(ctx, tx); err != nil {
		return err
	}
	if err := applyLastMaterialized(ctx, tx, in.lastMat); err != nil {
		return err
	}
	if err := in.lastAttempt.apply(ctx, tx); err != nil {
		return err
	}
	for _, key := range in.assetOrder {
		if _, err := AppendEvent(ctx, tx, "partitions.reported", "asset:"+key, actor, map[string]any{"items": in.perAsset[key]}, "", now); err != nil {
			return err
		}
	}
	return nil
}

// leasedStatus sets a reported partition's status, unless a run of the
// engine builds it now (its lease): then the report is recorded (its
// instance, and as the last materialization or attempt) but the partition
// stays in progress and leased, so that no other run builds it meanwhile.
// When the run ends, its result applies over the report; when it ends
// without one (canceled, interrupted), the partition takes the reported
// status (applyFinished).
const leasedStatus = `status=CASE WHEN partition_status.status='in_progress' AND partition_status.lease_instance_id IS NOT NULL
		THEN partition_status.status ELSE excluded.status END,
	lease_instance_id=CASE WHEN partition_status.status='in_progress' THEN partition_status.lease_instance_id END,
	lease_run_id=CASE WHEN partition_status.status='in_progress' THEN partition_status.lease_run_id END,
	lease_code_version=CASE WHEN partition_status.status='in_progress' THEN partition_status.lease_code_version END`

// ReportInstanceID is the instance id of a report that names the run
// building the partition while its attempt holds the lease (whose instance
// has InstanceID's id): another one, so that the report and the attempt
// are two instances.
func ReportInstanceID(runID, asset, partition string) string {
	return InstanceID(runID+"/report", asset, partition)
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type rollupKey struct {
	asset, block int64
	status       string
}

// rollupDelta accumulates count changes and applies them once per
// transaction. Every status row a transaction writes is added to it (with a
// zero delta when its status did not change): apply marks the blocks of
// those rows for the persisted staleness facts (markStaleBlocks).
type rollupDelta map[rollupKey]int64

func (r rollupDelta) add(asset, idx int64, status string, d int64) {
	if idx < 0 {
		return
	}
	r[rollupKey{asset, idx >> RollupShift, status}] += d
}

func (r rollupDelta) apply(ctx context.Context, tx *sqlx.Tx) error {
	if err := markStaleBlocks(ctx, tx, r.blocks()); err != nil {
		return err
	}
	// The counts in batched upserts (a map's keys are distinct, as one
	// statement's conflicting rows must be), then the deletes of the counts
	// that went down to 0.
	// In key order: two transactions counting the same blocks (a step and
	// a report on PostgreSQL) lock their rows in the same order.
	keys := make([]rollupKey, 0, len(r))
	for k, d := range r {
		if d != 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b rollupKey) int {
		return cmp.Or(cmp.Compare(a.asset, b.asset), cmp.Compare(a.block, b.block), strings.Compare(a.status, b.status))
	})
	args := make([]any, 0, 4*len(keys))
	var down []rollupKey
	for _, k := range keys {
		d := r[k]
		args = append(args, k.asset, k.block, k.status, d)
		if d < 0 {
			down = append(down, k)
		}
	}
	if err := batchExec(ctx, tx, `INSERT INTO partition_rollup (asset_id, block, status, n) SELECT column1, column2, column3, column4 FROM (VALUES `, nil,
		`(?,?,?,?)`, `) WHERE true ON CONFLICT (asset_id, block, status) DO UPDATE SET n = partition_rollup.n + excluded.n`, 4, args); err != nil {
		return err
	}
	for _, k := range down {
		// Only a count that went down can have reached 0. (A DELETE of
		// every empty count scanned the whole table on each command.)
		if err := execLater(ctx, tx, `DELETE FROM partition_rollup WHERE asset_id=? AND block=? AND status=? AND n = 0`, k.asset, k.block, k.status); err != nil {
			return err
		}
	}
	return nil
}

// lastAttempt is an asset's newest partition attempt.
type lastAttempt struct {
	at     int64
	status string
}

// lastAttempts collects, per asset, the newest attempt of a command (a
// failure wins a tie) for assets.last_attempt_*.
type lastAttempts map[int64]lastAttempt

func (l lastAttempts) add(asset, at int64, status string) {
	cur, ok := l[asset]
	if !ok || at > cur.at || at == cur.at && status == StatusFailed {
		l[asset] = lastAttempt{at, status}
	}
}

// apply moves each asset's last attempt forward (never backwards; a failure
// wins a tie with what is stored).
func (l lastAttempts) apply(ctx context.Context, tx *sqlx.Tx) error {
	for id, a := range l {
		if err := execLater(ctx, tx, `UPDATE assets SET last_attempt_at = ?1, last_attempt_status = ?2 WHERE id = ?3
			AND (last_attempt_at IS NULL OR last_attempt_at < ?1 OR last_attempt_at = ?1 AND ?2 = 'failed')`, a.at, a.status, id); err != nil {
			return err
		}
	}
	return nil
}

// RecomputeLastAttempts sets every asset's last attempt from its status rows
// (after status rows were written in bulk, bypassing the commands).
func RecomputeLastAttempts(ctx context.Context, tx *sqlx.Tx) error {
	_, err := tx.ExecContext(ctx, `UPDATE assets SET (last_attempt_at, last_attempt_status) = (
		SELECT p.at, p.st FROM (
			SELECT last_attempt_at AS at, last_attempt_status AS st FROM partition_status WHERE asset_id = assets.id AND last_attempt_at IS NOT NULL
			UNION ALL SELECT finished_at, 'materialized' FROM status_ranges WHERE asset_id = assets.id) AS p
		ORDER BY p.at DESC, p.st = 'failed' DESC LIMIT 1)`)
	return err
}

// applyAssetLasts moves the assets' last materialization (lastMat) and last
// attempt forward: one statement for an asset in both (a step's usual
// case: a round trip less on PostgreSQL), else one for each.
func applyAssetLasts(ctx context.Context, tx *sqlx.Tx, lastMat map[int64]int64, lastAttempt lastAttempts) error {
	rest := lastAttempts{}
	for id, a := range lastAttempt {
		at, ok := lastMat[id]
		if !ok {
			rest[id] = a
			continue
		}
		// Both SET expressions read the row as it was: the condition is
		// lastAttempts.apply's.
		if err := execLater(ctx, tx, `UPDATE assets SET last_materialized_at = `+greatest(dialectOf(tx))+`(COALESCE(last_materialized_at, 0), ?1),
			last_attempt_at = CASE WHEN last_attempt_at IS NULL OR last_attempt_at < ?2 OR last_attempt_at = ?2 AND ?3 = 'failed' THEN ?2 ELSE last_attempt_at END,
			last_attempt_status = CASE WHEN last_attempt_at IS NULL OR last_attempt_at < ?2 OR last_attempt_at = ?2 AND ?3 = 'failed' THEN ?3 ELSE last_attempt_status END
			WHERE id = ?4`, at, a.at, a.status, id); err != nil {
			return err
		}
	}
	mats := map[int64]int64{}
	for id, at := range lastMat {
		if _, ok := lastAttempt[id]; !ok {
			mats[id] = at
		}
	}
	if err := applyLastMaterialized(ctx, tx, mats); err != nil {
		return err
	}
	return rest.apply(ctx, tx)
}

// applyLastMaterialized moves each asset's last materialization (by id) up
// to the time gathered for it, never back.
func applyLastMaterialized(ctx context.Context, tx *sqlx.Tx, lastMat map[int64]int64) error {
	for id, at := range lastMat {
		if err := execLater(ctx, tx, `UPDATE assets SET last_materialized_at = `+greatest(dialectOf(tx))+`(COALESCE(last_materialized_at, 0), ?) WHERE id=?`, at, id); err != nil {
			return err
		}
	}
	return nil
}
