package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/tessera-dev/tessera/catalog"
)

// Staleness is computed at read time from the partition status rows of an
// asset and of its direct upstreams (catalog.Classify holds the rules). The
// facts read from the store are memoized per asset, keyed by the data
// version (the newest event id: every write to partition_status appends an
// event in the same transaction), the asset definition and the size of its
// partition space; the reasons themselves are re-derived on every read
// because FRESHNESS depends on the clock.

// Row flags of StaleFacts.
const (
	factMaterialized uint8 = 1 << iota
	factTainted
)

// Status codes of StaleFacts.Status.
const (
	stMaterialized uint8 = iota
	stFailed
	stInProgress
)

var statusNames = [...]string{StatusMaterialized, StatusFailed, StatusInProgress}

// baseFacts are one asset's status rows in index order (only the columns the
// staleness rules need).
type baseFacts struct {
	Idx    []int64
	Status []uint8
	Flags  []uint8
	MatAt  []int64
	Code   []string // interned
}

// StaleFacts is an asset's staleness input: its rows plus, per row, the
// newest mapped upstream materialization and the freshness deadline.
type StaleFacts struct {
	Asset     *catalog.Asset
	ID        int64
	N         int64 // partitions in the asset's space
	base      *baseFacts
	UpAt      []int64 // newest mapped upstream materialization (Unix ms), 0 if none
	upDep     []int16 // dependency index of UpAt, -1 if none
	upIdx     []int64 // upstream partition index of UpAt
	StaleFrom []int64
	upSpaces  []catalog.Space
}

// Rows is the number of stored status rows.
func (f *StaleFacts) Rows() int { return len(f.base.Idx) }

// facts fills pf for row j.
func (f *StaleFacts) facts(j int, pf *catalog.PartitionFacts) {
	b := f.base
	pf.Materialized = b.Flags[j]&factMaterialized != 0
	pf.MatAt = b.MatAt[j]
	pf.CodeVersion = b.Code[j]
	pf.TaintedAt = 0
	if b.Flags[j]&factTainted != 0 {
		pf.TaintedAt = 1
	}
	pf.LastAttempt = statusNames[b.Status[j]]
	pf.Upstream.MatAt = f.UpAt[j]
	pf.StaleFrom = f.StaleFrom[j]
}

// ReasonCounts counts partitions per reason (catalog.Fresh included).
type ReasonCounts map[catalog.StaleReason]int64

// Stale sums every reason but Fresh.
func (c ReasonCounts) Stale() int64 {
	var n int64
	for r, k := range c {
		if r != catalog.Fresh {
			n += k
		}
	}
	return n
}

// reasonIndex numbers the reasons for counting in arrays.
func reasonIndex(r catalog.StaleReason) int {
	switch r {
	case catalog.NeverMaterialized:
		return 1
	case catalog.Tainted:
		return 2
	case catalog.CodeChanged:
		return 3
	case catalog.UpstreamChanged:
		return 4
	case catalog.FreshnessLate:
		return 5
	}
	return 0
}

var reasonByIndex = [6]catalog.StaleReason{catalog.Fresh, catalog.NeverMaterialized, catalog.Tainted, catalog.CodeChanged, catalog.UpstreamChanged, catalog.FreshnessLate}

func countsOf(a *[6]int64) ReasonCounts {
	out := make(ReasonCounts, 6)
	for i, n := range a {
		out[reasonByIndex[i]] = n
	}
	return out
}

// Counts counts the reasons of the partitions with index in [lo, hi]
// (partitions without a row are NEVER_MATERIALIZED).
func (f *StaleFacts) Counts(lo, hi int64, now time.Time) ReasonCounts {
	var a [6]int64
	if hi >= f.N {
		hi = f.N - 1
	}
	if lo > hi {
		return countsOf(&a)
	}
	ms := now.UnixMilli()
	code := f.Asset.CodeVersion
	var pf catalog.PartitionFacts
	j0 := f.lower(lo)
	j := j0
	for ; j < len(f.base.Idx) && f.base.Idx[j] <= hi; j++ {
		f.facts(j, &pf)
		a[reasonIndex(catalog.Classify(&pf, code, ms))]++
	}
	a[1] += (hi - lo + 1) - int64(j-j0)
	return countsOf(&a)
}

// BucketCounts counts reasons in consecutive buckets of size partitions
// starting at lo, up to hi.
func (f *StaleFacts) BucketCounts(lo, hi, size int64, now time.Time) []ReasonCounts {
	if hi >= f.N {
		hi = f.N - 1
	}
	if size <= 0 || hi < lo {
		return nil
	}
	n := (hi-lo)/size + 1
	acc := make([][6]int64, n)
	rows := make([]int64, n)
	ms := now.UnixMilli()
	code := f.Asset.CodeVersion
	var pf catalog.PartitionFacts
	for j := f.lower(lo); j < len(f.base.Idx) && f.base.Idx[j] <= hi; j++ {
		b := (f.base.Idx[j] - lo) / size
		f.facts(j, &pf)
		acc[b][reasonIndex(catalog.Classify(&pf, code, ms))]++
		rows[b]++
	}
	out := make([]ReasonCounts, n)
	for b := range out {
		from := lo + int64(b)*size
		to := min(from+size-1, hi)
		acc[b][1] += (to - from + 1) - rows[b]
		out[b] = countsOf(&acc[b])
	}
	return out
}

// Reason returns the reason of partition idx.
func (f *StaleFacts) Reason(idx int64, now time.Time) catalog.StaleReason {
	j := f.lower(idx)
	if j >= len(f.base.Idx) || f.base.Idx[j] != idx {
		return catalog.NeverMaterialized
	}
	var pf catalog.PartitionFacts
	f.facts(j, &pf)
	return catalog.Classify(&pf, f.Asset.CodeVersion, now.UnixMilli())
}

// Upstream returns the newest mapped upstream materialization of partition
// idx (asset and key resolved), or a zero fact.
func (f *StaleFacts) Upstream(idx int64) catalog.UpstreamFact {
	j := f.lower(idx)
	if j >= len(f.base.Idx) || f.base.Idx[j] != idx || f.upDep[j] < 0 {
		return catalog.UpstreamFact{}
	}
	d := f.upDep[j]
	return catalog.UpstreamFact{Asset: f.Asset.Deps[d].Asset, Key: f.upSpaces[d].Key(f.upIdx[j]), MatAt: f.UpAt[j]}
}

// StaleFromAt returns the freshness deadline of partition idx (NeverStale
// when it has no row).
func (f *StaleFacts) StaleFromAt(idx int64) int64 {
	j := f.lower(idx)
	if j >= len(f.base.Idx) || f.base.Idx[j] != idx {
		return catalog.NeverStale
	}
	return f.StaleFrom[j]
}

// LatestWhere returns the highest index whose reason is r, or -1.
func (f *StaleFacts) LatestWhere(r catalog.StaleReason, now time.Time) int64 {
	ms := now.UnixMilli()
	var pf catalog.PartitionFacts
	for j := len(f.base.Idx) - 1; j >= 0; j-- {
		if f.base.Idx[j] >= f.N {
			continue
		}
		f.facts(j, &pf)
		if catalog.Classify(&pf, f.Asset.CodeVersion, ms) == r {
			return f.base.Idx[j]
		}
	}
	return -1
}

// MatAtOf returns the last materialization time of partition idx (0: none).
func (f *StaleFacts) MatAtOf(idx int64) int64 {
	j := f.lower(idx)
	if j >= len(f.base.Idx) || f.base.Idx[j] != idx || f.base.Flags[j]&factMaterialized == 0 {
		return 0
	}
	return f.base.MatAt[j]
}

func (f *StaleFacts) lower(idx int64) int {
	return sort.Search(len(f.base.Idx), func(i int) bool { return f.base.Idx[i] >= idx })
}

// StaleInput is what the store needs to compute an asset's staleness: the
// workspace (for upstream definitions), asset ids and partition spaces.
type StaleInput struct {
	WS      *catalog.Workspace
	IDs     map[string]int64
	SpaceOf func(a *catalog.Asset) catalog.Space
}

type baseEntry struct {
	version int64
	code    string
	facts   *baseFacts
}

type factsEntry struct {
	version int64
	asset   *catalog.Asset
	n       int64
	upN     []int64
	facts   *StaleFacts
}

// staleCache memoizes facts per asset. It follows the event log to know
// which assets changed since an entry was computed: events about an asset
// (subject "asset:KEY") and backfill attempts (payload asset ids) dirty
// those assets only, events known not to touch partitions (accounts,
// backfill bookkeeping) dirty nothing, and any other event dirties every
// asset. An entry is valid while neither its asset nor its upstreams are
// dirty after the entry's version.
type staleCache struct {
	mu       sync.Mutex
	locks    map[string]*sync.Mutex
	base     map[int64]baseEntry
	facts    map[string]factsEntry
	refresh  sync.Mutex
	scanned  int64           // newest event id looked at
	dirtyAll int64           // newest event id that may have changed any asset
	dirty    map[int64]int64 // asset id -> newest event id that changed it
	// Partition keys changed per asset (event id, key), so that a base entry
	// can be patched instead of reloaded; full[id] is the newest event that
	// changed the asset in a way that needs a full reload.
	changes map[int64][]keyChange
	full    map[int64]int64
	reloads atomic.Int64 // full reloads of a base entry (tests)
}

type keyChange struct {
	event int64
	key   string
}

// maxPatchKeys bounds the partitions patched into a base entry of a small
// asset; beyond patchLimit the entry is reloaded.
const maxPatchKeys = 5000

// patchLimit is how many changed partitions are patched into a base entry of
// rows rows before a full reload is cheaper: a patch reads about the rows
// it changed (one index seek per run of neighbours), a reload every row. It
// grows with the asset, so that a backfill writing thousands of partitions
// a second between two page views of a million-partition asset costs a
// patch, not a reload of the million rows on every view.
func patchLimit(rows int) int { return max(maxPatchKeys, rows/8) }

var caches sync.Map // *Store -> *staleCache

func (s *Store) staleCache() *staleCache {
	if c, ok := caches.Load(s); ok {
		return c.(*staleCache)
	}
	c, _ := caches.LoadOrStore(s, &staleCache{locks: map[string]*sync.Mutex{}, base: map[int64]baseEntry{},
		facts: map[string]factsEntry{}, dirty: map[int64]int64{}, changes: map[int64][]keyChange{}, full: map[int64]int64{}})
	return c.(*staleCache)
}

func (c *staleCache) lock(key string) func() {
	c.mu.Lock()
	l := c.locks[key]
	if l == nil {
		l = &sync.Mutex{}
		c.locks[key] = l
	}
	c.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// DataVersion is the newest event id: it changes with every command.
func (s *Store) DataVersion(ctx context.Context) (int64, error) {
	var v sql.NullInt64
	err := s.R.GetContext(ctx, &v, `SELECT MAX(id) FROM events`)
	return v.Int64, err
}

// maxEventScan bounds the events read to find what changed; beyond it
// every asset is recomputed.
const maxEventScan = 20000

// eventIgnored lists event types that never change partition status rows.
func eventIgnored(typ, subject string) bool {
	switch typ {
	case "materializations.batch", // its partitions.reported events name the assets
		EvBackfillCreated, EvBackfillState, EvRunsPlanned, EvConflict:
		return true
	}
	return strings.HasPrefix(subject, "user:") || strings.HasPrefix(typ, "session.") ||
		strings.HasPrefix(typ, "token.") || strings.HasPrefix(typ, "user.")
}

// sync reads the events written since the last call and returns the current
// data version.
func (c *staleCache) sync(ctx context.Context, s *Store, ids map[string]int64) (int64, error) {
	v, err := s.DataVersion(ctx)
	if err != nil {
		return 0, err
	}
	c.refresh.Lock()
	defer c.refresh.Unlock()
	if v <= c.scanned {
		return v, nil
	}
	c.mu.Lock()
	first := c.scanned == 0
	c.mu.Unlock()
	if first || v-c.scanned > maxEventScan {
		c.mu.Lock()
		c.dirtyAll, c.scanned = v, v
		c.mu.Unlock()
		return v, nil
	}
	rows, err := s.R.QueryContext(ctx, `SELECT id, type, subject, CASE WHEN type IN (?, ?, 'partitions.reported', 'partition.tainted', 'partition.taint_cleared') THEN payload ELSE '' END
		FROM events WHERE id > ? AND id <= ? ORDER BY id`, EvAttemptsStarted, EvAttemptsFinished, c.scanned, v)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	all := int64(0)
	dirty := map[int64]int64{}
	full := map[int64]int64{}
	var changed []struct {
		asset int64
		keyChange
	}
	addKey := func(asset, id int64, key string) {
		changed = append(changed, struct {
			asset int64
			keyChange
		}{asset, keyChange{id, key}})
	}
	for rows.Next() {
		var id int64
		var typ, subject, payload string
		if err := rows.Scan(&id, &typ, &subject, &payload); err != nil {
			return 0, err
		}
		switch {
		case eventIgnored(typ, subject):
		case typ == "asset.watermark":
		case strings.HasPrefix(subject, "asset:"):
			aid, ok := ids[strings.TrimPrefix(subject, "asset:")]
			if !ok {
				continue
			}
			dirty[aid] = id
			var p struct {
				Partition string `json:"partition"`
				Items     []struct {
					Partition string `json:"partition"`
				} `json:"items"`
			}
			switch {
			case payload == "" || json.Unmarshal([]byte(payload), &p) != nil:
				full[aid] = id
			case p.Partition != "":
				addKey(aid, id, p.Partition)
			default:
				for _, it := range p.Items {
					addKey(aid, id, it.Partition)
				}
			}
		case payload != "":
			type ref struct {
				Key string `json:"k"`
			}
			var p struct {
				Attempts []struct {
					AssetID        int64 `json:"asset_id"`
					Parts          []ref `json:"parts"`
					Failures       []ref `json:"failures"`
					UpstreamFailed []ref `json:"upstream_failed"`
				} `json:"attempts"`
			}
			if json.Unmarshal([]byte(payload), &p) != nil {
				all = id
				continue
			}
			for _, a := range p.Attempts {
				dirty[a.AssetID] = id
				for _, refs := range [][]ref{a.Parts, a.Failures, a.UpstreamFailed} {
					for _, r := range refs {
						addKey(a.AssetID, id, r.Key)
					}
				}
			}
		default:
			all = id
		}
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if all > c.dirtyAll {
		c.dirtyAll = all
	}
	for k, id := range dirty {
		c.dirty[k] = id
	}
	for k, id := range full {
		c.full[k] = id
	}
	for _, ch := range changed {
		// A partition usually changes twice per attempt (started,
		// finished): the log holds up to twice the keys a patch takes.
		switch e, cached := c.base[ch.asset]; {
		case !cached:
			// Not loaded: any entry made meanwhile, at an older version,
			// must be reloaded in full rather than patched.
			c.full[ch.asset] = ch.event
		case len(c.changes[ch.asset]) < 2*patchLimit(len(e.facts.Idx)):
			c.changes[ch.asset] = append(c.changes[ch.asset], ch.keyChange)
		default:
			c.full[ch.asset] = ch.event
			c.changes[ch.asset] = nil
		}
	}
	c.scanned = v
	return v, nil
}

// cleanSince reports whether asset id is unchanged after version.
func (c *staleCache) cleanSince(id, version int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dirtyAll <= version && c.dirty[id] <= version
}

// StaleFacts returns (memoized) the staleness facts of asset a.
func (s *Store) StaleFacts(ctx context.Context, in StaleInput, a *catalog.Asset) (*StaleFacts, error) {
	v, err := s.SyncStaleness(ctx, in)
	if err != nil {
		return nil, err
	}
	return s.staleFactsAt(ctx, in, a, v)
}

// SyncStaleness catches the memoized facts up with the event log and
// returns the data version to pass to StaleFactsAt (one sync per request
// that reads many assets).
func (s *Store) SyncStaleness(ctx context.Context, in StaleInput) (int64, error) {
	return s.staleCache().sync(ctx, s, in.IDs)
}

// StaleFactsAt is StaleFacts at a version returned by SyncStaleness.
func (s *Store) StaleFactsAt(ctx context.Context, in StaleInput, a *catalog.Asset, version int64) (*StaleFacts, error) {
	return s.staleFactsAt(ctx, in, a, version)
}

func (s *Store) staleFactsAt(ctx context.Context, in StaleInput, a *catalog.Asset, version int64) (*StaleFacts, error) {
	c := s.staleCache()
	sp := in.SpaceOf(a)
	n := sp.Len()
	ups := make([]*catalog.Asset, len(a.Deps))
	upSp := make([]catalog.Space, len(a.Deps))
	upN := make([]int64, len(a.Deps))
	for i, d := range a.Deps {
		ups[i] = in.WS.Asset(d.Asset)
		if ups[i] == nil {
			return nil, fmt.Errorf("asset %s depends on undeclared asset %s", a.Key, d.Asset)
		}
		upSp[i] = in.SpaceOf(ups[i])
		upN[i] = upSp[i].Len()
	}
	id := in.IDs[a.Key]
	unlock := c.lock("facts:" + a.Key)
	defer unlock()
	c.mu.Lock()
	e, ok := c.facts[a.Key]
	c.mu.Unlock()
	if ok && e.asset == a && e.n == n && equalInts(e.upN, upN) && c.cleanSince(id, e.version) {
		clean := true
		for _, d := range a.Deps {
			clean = clean && c.cleanSince(in.IDs[d.Asset], e.version)
		}
		if clean {
			return e.facts, nil
		}
	}
	base, err := s.baseFactsAt(ctx, id, a.CodeVersion, sp, version)
	if err != nil {
		return nil, err
	}
	f := &StaleFacts{Asset: a, ID: id, N: n, base: base, upSpaces: upSp}
	rows := len(base.Idx)
	f.UpAt = make([]int64, rows)
	f.upDep = make([]int16, rows)
	f.upIdx = make([]int64, rows)
	for j := range f.upDep {
		f.upDep[j] = -1
	}
	for d, dep := range a.Deps {
		ub, err := s.baseFactsAt(ctx, in.IDs[dep.Asset], ups[d].CodeVersion, upSp[d], version)
		if err != nil {
			return nil, err
		}
		f.applyUpstream(int16(d), catalog.NewIndexMapper(dep, a.Scheme, sp, ups[d].Scheme, upSp[d]), ub, upN[d])
	}
	f.StaleFrom = make([]int64, rows)
	ends, hasWin := catalog.WindowEnds(a.Scheme, sp)
	for j := range rows {
		if base.Flags[j]&factMaterialized == 0 || a.Freshness == nil {
			f.StaleFrom[j] = catalog.NeverStale
			continue
		}
		var end time.Time
		if hasWin {
			end = ends(base.Idx[j])
		}
		f.StaleFrom[j] = a.Freshness.StaleFrom(end, hasWin, base.MatAt[j])
	}
	c.mu.Lock()
	c.facts[a.Key] = factsEntry{version: version, asset: a, n: n, upN: upN, facts: f}
	c.mu.Unlock()
	return f, nil
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// applyUpstream folds one dependency's upstream materializations into UpAt:
// each materialized upstream row is mapped to the downstream ranges that read
// it (O(1) arithmetic for time windows) and the newest time kept per row.
func (f *StaleFacts) applyUpstream(dep int16, m catalog.IndexMapper, ub *baseFacts, upN int64) {
	idx := f.base.Idx
	set := func(j int, at, u int64) {
		if at > f.UpAt[j] {
			f.UpAt[j], f.upDep[j], f.upIdx[j] = at, dep, u
		}
	}
	if m.All {
		best, bu := int64(0), int64(-1)
		for k, u := range ub.Idx {
			if u < upN && ub.Flags[k]&factMaterialized != 0 && ub.MatAt[k] > best {
				best, bu = ub.MatAt[k], u
			}
		}
		if bu >= 0 {
			for j := range idx {
				set(j, best, bu)
			}
		}
		return
	}
	var last []catalog.IndexRange
	lastU := int64(-2)
	for k, u := range ub.Idx {
		if u >= upN || ub.Flags[k]&factMaterialized == 0 {
			continue
		}
		at := ub.MatAt[k]
		var rs []catalog.IndexRange
		if u == lastU {
			rs = last
		} else {
			rs = m.Map(u)
			last, lastU = rs, u
		}
		for _, r := range rs {
			j := sort.Search(len(idx), func(i int) bool { return idx[i] >= r.Lo })
			for ; j < len(idx) && idx[j] <= r.Hi; j++ {
				set(j, at, u)
			}
		}
	}
}

func (s *Store) baseFactsAt(ctx context.Context, assetID int64, code string, sp catalog.Space, version int64) (*baseFacts, error) {
	c := s.staleCache()
	unlock := c.lock(fmt.Sprint("base:", assetID))
	defer unlock()
	c.mu.Lock()
	e, ok := c.base[assetID]
	var keys []string
	patchable := ok && e.code == code && c.dirtyAll <= e.version && c.full[assetID] <= e.version
	if patchable {
		seen := map[string]bool{}
		for _, ch := range c.changes[assetID] {
			if ch.event > e.version && !seen[ch.key] {
				seen[ch.key] = true
				keys = append(keys, ch.key)
			}
		}
		patchable = len(keys) <= patchLimit(len(e.facts.Idx))
	}
	c.mu.Unlock()
	if patchable && c.cleanSince(assetID, e.version) {
		return e.facts, nil
	}
	var b *baseFacts
	var err error
	if patchable {
		b, err = s.patchBaseFacts(ctx, e.facts, assetID, code, sp, keys)
	} else {
		c.reloads.Add(1)
		b, err = s.loadBaseFacts(ctx, assetID, code)
	}
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.base[assetID] = baseEntry{version: version, code: code, facts: b}
	// Changes up to version are in this entry now.
	kept := c.changes[assetID][:0:0]
	for _, ch := range c.changes[assetID] {
		if ch.event > version {
			kept = append(kept, ch)
		}
	}
	c.changes[assetID] = kept
	c.mu.Unlock()
	return b, nil
}

// patchBaseFacts returns a copy of old with the rows of keys re-read from
// the store (updated, inserted or removed). The changed indexes are read as
// ranges (neighbours merged, a few unchanged rows in between read again)
// through the covering staleness index, in one query per few thousand
// ranges: a backfill changes runs of consecutive partitions, so a patch
// costs about the rows it changed, not a lookup per key.
func (s *Store) patchBaseFacts(ctx context.Context, old *baseFacts, assetID int64, code string, sp catalog.Space, keys []string) (*baseFacts, error) {
	idxs := make([]int64, 0, len(keys))
	for _, k := range keys {
		if i, err := sp.Index(k); err == nil {
			idxs = append(idxs, i)
		}
	}
	slices.Sort(idxs)
	ranges := idxRanges(slices.Compact(idxs), patchGap)
	fresh := &baseFacts{}
	intern := map[string]string{code: code}
	for start := 0; start < len(ranges); start += patchRangesPerQuery {
		part := ranges[start:min(start+patchRangesPerQuery, len(ranges))]
		js, err := json.Marshal(part)
		if err != nil {
			return nil, err
		}
		// CROSS JOIN keeps the ranges the outer loop: one index seek each.
		rows, err := s.R.QueryContext(ctx, `SELECT ps.idx * 32 + ps.materialized + (ps.tainted_at IS NOT NULL) * 2
				+ (CASE ps.status WHEN 'failed' THEN 4 WHEN 'in_progress' THEN 8 ELSE 0 END),
				COALESCE(ps.last_mat_at, 0), COALESCE(ps.last_mat_code_version, '')
			FROM json_each(?) r CROSS JOIN partition_status ps INDEXED BY partition_status_staleness
			WHERE ps.asset_id = ? AND ps.idx BETWEEN json_extract(r.value, '$[0]') AND json_extract(r.value, '$[1]')`, string(js), assetID)
		if err != nil {
			return nil, err
		}
		var packed, at int64
		var cv sql.RawBytes
		for rows.Next() {
			if err := rows.Scan(&packed, &at, &cv); err != nil {
				rows.Close()
				return nil, err
			}
			c, ok := intern[string(cv)]
			if !ok {
				c = string(cv)
				intern[c] = c
			}
			fresh.push(packed, at, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	if !slices.IsSorted(fresh.Idx) {
		sort.Sort(byIdx{fresh})
	}
	// Merge: the old rows outside every range, and the rows read.
	n := len(old.Idx) + len(fresh.Idx)
	b := &baseFacts{Idx: make([]int64, 0, n), Status: make([]uint8, 0, n), Flags: make([]uint8, 0, n),
		MatAt: make([]int64, 0, n), Code: make([]string, 0, n)}
	take := func(f *baseFacts, k int) {
		b.Idx = append(b.Idx, f.Idx[k])
		b.Status = append(b.Status, f.Status[k])
		b.Flags = append(b.Flags, f.Flags[k])
		b.MatAt = append(b.MatAt, f.MatAt[k])
		b.Code = append(b.Code, f.Code[k])
	}
	r, j := 0, 0
	for k, i := range old.Idx {
		for j < len(fresh.Idx) && fresh.Idx[j] < i {
			take(fresh, j)
			j++
		}
		for r < len(ranges) && ranges[r][1] < i {
			r++
		}
		if r < len(ranges) && ranges[r][0] <= i {
			continue // re-read: kept if still there, from fresh
		}
		take(old, k)
	}
	for ; j < len(fresh.Idx); j++ {
		take(fresh, j)
	}
	return b, nil
}

// patchGap is how many unchanged rows between two changed ones are read
// again rather than seek twice; patchRangesPerQuery bounds a query's ranges.
const (
	patchGap            = 16
	patchRangesPerQuery = 4096
)

// idxRanges merges sorted, distinct indexes into [lo, hi] ranges, joining
// neighbours at most gap apart.
func idxRanges(idxs []int64, gap int64) [][2]int64 {
	var out [][2]int64
	for _, i := range idxs {
		if n := len(out); n > 0 && i-out[n-1][1] <= gap+1 {
			out[n-1][1] = i
			continue
		}
		out = append(out, [2]int64{i, i})
	}
	return out
}

// byIdx sorts baseFacts rows by index.
type byIdx struct{ f *baseFacts }

func (s byIdx) Len() int           { return len(s.f.Idx) }
func (s byIdx) Less(a, b int) bool { return s.f.Idx[a] < s.f.Idx[b] }
func (s byIdx) Swap(a, b int) {
	f := s.f
	f.Idx[a], f.Idx[b] = f.Idx[b], f.Idx[a]
	f.Status[a], f.Status[b] = f.Status[b], f.Status[a]
	f.Flags[a], f.Flags[b] = f.Flags[b], f.Flags[a]
	f.MatAt[a], f.MatAt[b] = f.MatAt[b], f.MatAt[a]
	f.Code[a], f.Code[b] = f.Code[b], f.Code[a]
}

// loadBaseFacts reads an asset's facts; large assets are read in a few
// index ranges of about equal row counts (from the rollup), concurrently.
func (s *Store) loadBaseFacts(ctx context.Context, assetID int64, code string) (*baseFacts, error) {
	var blocks []struct {
		Block int64 `db:"block"`
		N     int64 `db:"n"`
	}
	if err := s.R.SelectContext(ctx, &blocks, `SELECT block, SUM(n) AS n FROM partition_rollup WHERE asset_id=? GROUP BY block ORDER BY block`, assetID); err != nil {
		return nil, err
	}
	var total int64
	for _, b := range blocks {
		total += b.N
	}
	parts := int64(min(runtime.NumCPU(), 4))
	if total < 200_000 || parts < 2 {
		return s.loadRange(ctx, assetID, code, 0, math.MaxInt64, total)
	}
	type span struct{ lo, hi, n int64 }
	var spans []span
	cur := span{lo: 0}
	for i, b := range blocks {
		cur.n += b.N
		if cur.n >= total/parts && int64(len(spans)) < parts-1 && i < len(blocks)-1 {
			cur.hi = (b.Block+1)<<RollupShift - 1
			spans = append(spans, cur)
			cur = span{lo: cur.hi + 1}
		}
	}
	cur.hi = math.MaxInt64
	spans = append(spans, cur)
	out := make([]*baseFacts, len(spans))
	errs := make([]error, len(spans))
	var wg sync.WaitGroup
	for i, sp := range spans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = s.loadRange(ctx, assetID, code, sp.lo, sp.hi, sp.n)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	b := &baseFacts{Idx: make([]int64, 0, total), Status: make([]uint8, 0, total), Flags: make([]uint8, 0, total),
		MatAt: make([]int64, 0, total), Code: make([]string, 0, total)}
	for _, p := range out {
		b.Idx = append(b.Idx, p.Idx...)
		b.Status = append(b.Status, p.Status...)
		b.Flags = append(b.Flags, p.Flags...)
		b.MatAt = append(b.MatAt, p.MatAt...)
		b.Code = append(b.Code, p.Code...)
	}
	return b, nil
}

// push appends one row read as idx*32 + materialized + tainted*2 +
// failed*4 + in_progress*8 (the packed column of loadRange and
// patchBaseFacts), its materialization time and code version.
func (b *baseFacts) push(packed, at int64, code string) {
	var fl, sc uint8
	if packed&1 != 0 {
		fl |= factMaterialized
	}
	if packed&2 != 0 {
		fl |= factTainted
	}
	switch {
	case packed&4 != 0:
		sc = stFailed
	case packed&8 != 0:
		sc = stInProgress
	}
	b.Idx = append(b.Idx, packed>>5)
	b.Status = append(b.Status, sc)
	b.Flags = append(b.Flags, fl)
	b.MatAt = append(b.MatAt, at)
	b.Code = append(b.Code, code)
}

// loadRange reads the facts of the rows with index in [lo, hi].
func (s *Store) loadRange(ctx context.Context, assetID int64, code string, lo, hi, n int64) (*baseFacts, error) {
	b := &baseFacts{Idx: make([]int64, 0, n), Status: make([]uint8, 0, n), Flags: make([]uint8, 0, n),
		MatAt: make([]int64, 0, n), Code: make([]string, 0, n)}
	// Three columns per row (each column costs cgo calls): the index and
	// flags packed in one integer, the materialization time, and the code
	// version only where it differs from the asset's current one.
	rows, err := s.R.QueryContext(ctx, `SELECT idx * 32 + materialized + (tainted_at IS NOT NULL) * 2
			+ (CASE status WHEN 'failed' THEN 4 WHEN 'in_progress' THEN 8 ELSE 0 END),
			COALESCE(last_mat_at, 0),
			CASE WHEN last_mat_code_version IS ? THEN NULL ELSE COALESCE(last_mat_code_version, '') END
		FROM partition_status INDEXED BY partition_status_staleness WHERE asset_id=? AND idx BETWEEN ? AND ? ORDER BY idx`, code, assetID, lo, hi)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	intern := map[string]string{}
	var packed, at int64
	var cv sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&packed, &at, &cv); err != nil {
			return nil, err
		}
		c := code
		if cv != nil {
			var ok bool
			if c, ok = intern[string(cv)]; !ok {
				c = string(cv)
				intern[c] = c
			}
		}
		b.push(packed, at, c)
	}
	return b, rows.Err()
}

// PartitionStaleness explains one partition: its facts from the status row
// (taint reason, code version), the newest mapped upstream materialization
// and the freshness deadline.
func (s *Store) PartitionStaleness(ctx context.Context, in StaleInput, a *catalog.Asset, key string, now time.Time) (catalog.Staleness, error) {
	v, err := s.SyncStaleness(ctx, in)
	if err != nil {
		return catalog.Staleness{}, err
	}
	return s.PartitionStalenessAt(ctx, in, a, key, now, v)
}

// PartitionStalenessAt is PartitionStaleness at a version returned by
// SyncStaleness (0: sync only if needed).
//
// It reads what one partition's staleness depends on and nothing more: its
// own status row and, per dependency, the newest materialization among the
// upstream partitions it reads (one scan of their index ranges), so that its
// cost grows neither with the asset nor with what was written since the
// last read. The memoized facts of the whole asset (StaleFacts) would be
// patched with every partition a running backfill wrote meanwhile, and the
// upstream facts of every row of the asset re-derived. A dependency reading
// more than partitionScanLimit upstream partitions (mapping all on a large
// upstream) takes its newest materialization from the memoized upstream
// facts at version instead.
func (s *Store) PartitionStalenessAt(ctx context.Context, in StaleInput, a *catalog.Asset, key string, now time.Time, version int64) (catalog.Staleness, error) {
	sp := in.SpaceOf(a)
	idx, err := sp.Index(key)
	if err != nil {
		return catalog.Staleness{}, err
	}
	pf := catalog.PartitionFacts{StaleFrom: catalog.NeverStale}
	st, err := s.Partition(ctx, in.IDs[a.Key], key)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return catalog.Staleness{}, err
	default:
		pf = st.Facts()
		if pf.Upstream, err = s.upstreamFact(ctx, in, a, sp, key, version); err != nil {
			return catalog.Staleness{}, err
		}
		if pf.Materialized && a.Freshness != nil {
			var end time.Time
			ends, hasWin := catalog.WindowEnds(a.Scheme, sp)
			if hasWin {
				end = ends(idx)
			}
			pf.StaleFrom = a.Freshness.StaleFrom(end, hasWin, pf.MatAt)
		}
	}
	return catalog.Explain(pf, a.CodeVersion, a.Freshness, now), nil
}

// partitionScanLimit bounds the upstream partitions of one dependency that
// PartitionStalenessAt scans in the store; beyond it the memoized upstream
// facts are scanned in memory (a variable for tests).
var partitionScanLimit int64 = 50_000

// upstreamFact returns the newest materialization among the upstream
// partitions that partition key of a reads, as StaleFacts.Upstream does:
// the newest time over every dependency, on a tie the first dependency and
// its lowest upstream index.
func (s *Store) upstreamFact(ctx context.Context, in StaleInput, a *catalog.Asset, sp catalog.Space, key string, version int64) (catalog.UpstreamFact, error) {
	var best catalog.UpstreamFact
	for _, dep := range a.Deps {
		up := in.WS.Asset(dep.Asset)
		if up == nil {
			return best, fmt.Errorf("asset %s depends on undeclared asset %s", a.Key, dep.Asset)
		}
		usp := in.SpaceOf(up)
		// Like the mapper of the full computation, a key the mapping cannot
		// place reads nothing.
		rs, err := catalog.UpstreamOf(dep, a.Scheme, sp, up.Scheme, usp, key)
		if err != nil || len(rs) == 0 {
			continue
		}
		u, at := int64(-1), int64(0)
		if catalog.CountRanges(rs) > partitionScanLimit {
			if version == 0 {
				if version, err = s.SyncStaleness(ctx, in); err != nil {
					return best, err
				}
			}
			ub, err := s.baseFactsAt(ctx, in.IDs[up.Key], up.CodeVersion, usp, version)
			if err != nil {
				return best, err
			}
			u, at = ub.newestIn(rs)
		} else if u, at, err = s.newestMaterialized(ctx, in.IDs[up.Key], rs); err != nil {
			return best, err
		}
		if u >= 0 && at > best.MatAt {
			best = catalog.UpstreamFact{Asset: dep.Asset, Key: usp.Key(u), MatAt: at}
		}
	}
	return best, nil
}

// newestIn returns the lowest index of the newest materialization in rs
// (-1 when none has a time).
func (b *baseFacts) newestIn(rs []catalog.IndexRange) (u, at int64) {
	u = -1
	for _, r := range rs {
		j := sort.Search(len(b.Idx), func(i int) bool { return b.Idx[i] >= r.Lo })
		for ; j < len(b.Idx) && b.Idx[j] <= r.Hi; j++ {
			if b.Flags[j]&factMaterialized == 0 {
				continue
			}
			if t := b.MatAt[j]; t > at || (t == at && t > 0 && b.Idx[j] < u) {
				u, at = b.Idx[j], t
			}
		}
	}
	return u, at
}

// newestMaterialized is newestIn read from the store: one query through the
// covering staleness index, one seek per range.
func (s *Store) newestMaterialized(ctx context.Context, assetID int64, rs []catalog.IndexRange) (u, at int64, err error) {
	pairs := make([][2]int64, len(rs))
	for i, r := range rs {
		pairs[i] = [2]int64{r.Lo, r.Hi}
	}
	js, err := json.Marshal(pairs)
	if err != nil {
		return -1, 0, err
	}
	var row struct {
		Idx int64 `db:"idx"`
		At  int64 `db:"at"`
	}
	err = s.R.GetContext(ctx, &row, `SELECT ps.idx AS idx, ps.last_mat_at AS at
		FROM json_each(?) r CROSS JOIN partition_status ps INDEXED BY partition_status_staleness
		WHERE ps.asset_id = ? AND ps.idx BETWEEN json_extract(r.value, '$[0]') AND json_extract(r.value, '$[1]')
			AND ps.materialized = 1 AND ps.last_mat_at > 0
		ORDER BY ps.last_mat_at DESC, ps.idx LIMIT 1`, string(js), assetID)
	if errors.Is(err, sql.ErrNoRows) {
		return -1, 0, nil
	}
	if err != nil {
		return -1, 0, err
	}
	return row.Idx, row.At, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Taint marks a materialized partition's canonical instance as invalid. It
// stays visible, becomes stale with reason TAINTED, and the next successful
// build supersedes it. ErrNotFound when the partition was never
// materialized.
func (s *Store) Taint(ctx context.Context, assetID int64, assetKey, key, reason, actor string, now time.Time) error {
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		var st PartitionStatus
		err := tx.GetContext(ctx, &st, `SELECT * FROM partition_status WHERE asset_id=? AND partition_key=?`, assetID, key)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && !st.Materialized) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		st.fill()
		if _, err := tx.ExecContext(ctx, `UPDATE partition_status SET tainted_at=?, taint_reason=?, updated_at=? WHERE asset_id=? AND partition_key=?`,
			Millis(now), reason, Millis(now), assetID, key); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE partition_taints SET cleared_at=?, cleared_by=? WHERE asset_id=? AND partition_key=? AND cleared_at IS NULL`,
			Millis(now), actor, assetID, key); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO partition_taints (asset_id, partition_key, instance_id, reason, actor, tainted_at) VALUES (?,?,?,?,?,?)`,
			assetID, key, st.CanonicalInstanceID, reason, actor, Millis(now)); err != nil {
			return err
		}
		_, err = AppendEvent(ctx, tx, "partition.tainted", "asset:"+assetKey, actor,
			map[string]any{"partition": key, "reason": reason, "instance_id": st.CanonicalInstanceID}, "", now)
		return err
	})
}

// ClearTaint removes a partition's taint; ErrNotFound when it is not tainted.
func (s *Store) ClearTaint(ctx context.Context, assetID int64, assetKey, key, actor string, now time.Time) error {
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE partition_status SET tainted_at=NULL, taint_reason=NULL, updated_at=? WHERE asset_id=? AND partition_key=? AND tainted_at IS NOT NULL`,
			Millis(now), assetID, key)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		if _, err := tx.ExecContext(ctx, `UPDATE partition_taints SET cleared_at=?, cleared_by=? WHERE asset_id=? AND partition_key=? AND cleared_at IS NULL`,
			Millis(now), actor, assetID, key); err != nil {
			return err
		}
		_, err = AppendEvent(ctx, tx, "partition.taint_cleared", "asset:"+assetKey, actor, map[string]any{"partition": key}, "", now)
		return err
	})
}

// Taint is one taint of a partition instance.
type Taint struct {
	ID         int64   `db:"id" json:"-"`
	AssetID    int64   `db:"asset_id" json:"-"`
	Partition  string  `db:"partition_key" json:"partition"`
	InstanceID *string `db:"instance_id" json:"instance_id"`
	Reason     string  `db:"reason" json:"reason"`
	Actor      string  `db:"actor" json:"actor"`
	TaintedAt  int64   `db:"tainted_at" json:"tainted_at"`
	ClearedAt  *int64  `db:"cleared_at" json:"cleared_at,omitempty"`
	ClearedBy  *string `db:"cleared_by" json:"cleared_by,omitempty"`
}

// Taints lists a partition's taints, newest first.
func (s *Store) Taints(ctx context.Context, assetID int64, key string) ([]Taint, error) {
	var out []Taint
	err := s.R.SelectContext(ctx, &out, `SELECT * FROM partition_taints WHERE asset_id=? AND partition_key=? ORDER BY tainted_at DESC, id DESC`, assetID, key)
	return out, err
}

// HistoryAt answers "what was this partition's instance at time at": the
// canonical instance then (the newest successful build finished at or before
// at), the newest attempt started by then, and the taint in force.
type HistoryAt struct {
	At          int64     `json:"at"`
	Canonical   *Instance `json:"canonical"`
	LastAttempt *Instance `json:"last_attempt"`
	Taint       *Taint    `json:"taint"`
}

// PartitionHistoryAt returns the partition's state at time at.
func (s *Store) PartitionHistoryAt(ctx context.Context, assetID int64, key string, at time.Time) (HistoryAt, error) {
	ms := Millis(at)
	h := HistoryAt{At: ms}
	var c Instance
	err := s.R.GetContext(ctx, &c, `SELECT * FROM partition_instances WHERE asset_id=? AND partition_key=? AND status=? AND COALESCE(finished_at, created_at) <= ?
		ORDER BY COALESCE(finished_at, created_at) DESC, created_at DESC LIMIT 1`, assetID, key, StatusMaterialized, ms)
	switch {
	case err == nil:
		h.Canonical = &c
	case !errors.Is(err, sql.ErrNoRows):
		return h, err
	}
	var l Instance
	err = s.R.GetContext(ctx, &l, `SELECT * FROM (SELECT `+instanceCols+` FROM partition_instances WHERE asset_id=? AND partition_key=?
		UNION ALL `+inProgressInstances(`ps.asset_id=? AND ps.partition_key=?`)+`) WHERE COALESCE(started_at, created_at) <= ?
		ORDER BY COALESCE(started_at, created_at) DESC, created_at DESC, COALESCE(finished_at, created_at) DESC LIMIT 1`, assetID, key, assetID, key, ms)
	switch {
	case err == nil:
		if l.FinishedAt != nil && *l.FinishedAt > ms {
			l.Status = StatusInProgress // it had not finished yet at that time
			l.FinishedAt = nil
		}
		h.LastAttempt = &l
	case !errors.Is(err, sql.ErrNoRows):
		return h, err
	}
	if h.Canonical != nil {
		var t Taint
		err = s.R.GetContext(ctx, &t, `SELECT * FROM partition_taints WHERE asset_id=? AND partition_key=? AND instance_id=? AND tainted_at <= ?
			AND (cleared_at IS NULL OR cleared_at > ?) ORDER BY tainted_at DESC LIMIT 1`, assetID, key, h.Canonical.ID, ms, ms)
		switch {
		case err == nil:
			h.Taint = &t
		case !errors.Is(err, sql.ErrNoRows):
			return h, err
		}
	}
	return h, nil
}

// Watermark is the live pipeline's ceiling for an asset.
type Watermark struct {
	AssetID   int64  `db:"asset_id" json:"-"`
	Partition string `db:"partition_key" json:"partition"`
	Idx       int64  `db:"idx" json:"-"`
	SetAt     int64  `db:"set_at" json:"set_at"`
	Actor     string `db:"actor" json:"actor"`
}

// SetWatermark records the last partition the live pipeline has processed.
func (s *Store) SetWatermark(ctx context.Context, assetID int64, assetKey, key string, idx int64, actor string, now time.Time) error {
	return s.Tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO watermarks (asset_id, partition_key, idx, set_at, actor) VALUES (?,?,?,?,?)
			ON CONFLICT (asset_id) DO UPDATE SET partition_key=excluded.partition_key, idx=excluded.idx, set_at=excluded.set_at, actor=excluded.actor`,
			assetID, key, idx, Millis(now), actor); err != nil {
			return err
		}
		_, err := AppendEvent(ctx, tx, "asset.watermark", "asset:"+assetKey, actor, map[string]any{"partition": key}, "", now)
		return err
	})
}

// GetWatermark returns the asset's watermark, or ErrNotFound.
func (s *Store) GetWatermark(ctx context.Context, assetID int64) (Watermark, error) {
	var w Watermark
	err := s.R.GetContext(ctx, &w, `SELECT * FROM watermarks WHERE asset_id=?`, assetID)
	if errors.Is(err, sql.ErrNoRows) {
		return w, ErrNotFound
	}
	return w, err
}

// MaterializedStale counts partitions whose status is materialized but that
// are stale (any reason): the overview's stale segment.
func (f *StaleFacts) MaterializedStale(now time.Time) int64 {
	if f.N == 0 {
		return 0
	}
	return f.MaterializedStaleBuckets(0, f.N-1, f.N, now)[0]
}

// Facts are the staleness facts of the partition's own row (materialized,
// when, with which code version, tainted, last attempt); upstream and
// StaleFrom are left to the caller (StaleFrom: never).
func (st PartitionStatus) Facts() catalog.PartitionFacts {
	pf := catalog.PartitionFacts{StaleFrom: catalog.NeverStale, Materialized: st.Materialized, LastAttempt: st.Status}
	if st.LastMatAt != nil {
		pf.MatAt = *st.LastMatAt
	}
	if st.LastMatCodeVersion != nil {
		pf.CodeVersion = *st.LastMatCodeVersion
	}
	if st.TaintedAt != nil {
		pf.TaintedAt = *st.TaintedAt
		pf.TaintReason = deref(st.TaintReason)
	}
	return pf
}

// MaterializedStaleBuckets counts, for each bucket of size partitions from
// lo (the last one ends at hi), the materialized partitions that are stale
// at now: the status grids draw them as stale, like the header's bar. One
// pass over the materialized partitions of [lo, hi].
func (f *StaleFacts) MaterializedStaleBuckets(lo, hi, size int64, now time.Time) []int64 {
	if hi < lo || size <= 0 {
		return nil
	}
	out := make([]int64, (hi-lo)/size+1)
	ms := now.UnixMilli()
	var pf catalog.PartitionFacts
	for j := f.lower(lo); j < len(f.base.Idx) && f.base.Idx[j] <= hi; j++ {
		if i := f.base.Idx[j]; i >= f.N || f.base.Status[j] != stMaterialized {
			continue
		}
		f.facts(j, &pf)
		if catalog.Classify(&pf, f.Asset.CodeVersion, ms) != catalog.Fresh {
			out[(f.base.Idx[j]-lo)/size]++
		}
	}
	return out
}

// CodeVersionAt returns the code version partition idx was materialized with.
func (f *StaleFacts) CodeVersionAt(idx int64) string {
	j := f.lower(idx)
	if j >= len(f.base.Idx) || f.base.Idx[j] != idx {
		return ""
	}
	return f.base.Code[j]
}

// LastAttemptFailed reports whether the asset's most recent attempt failed.
func (s *Store) LastAttemptFailed(ctx context.Context, assetID int64) (bool, error) {
	var st sql.NullString
	err := s.R.GetContext(ctx, &st, `SELECT last_attempt_status FROM assets WHERE id=?`, assetID)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return st.String == StatusFailed, err
}

// MaterializedBounds returns the lowest and highest index of a materialized
// partition (ok false when none is).
func (f *StaleFacts) MaterializedBounds() (first, last int64, ok bool) {
	first, last = -1, -1
	for j, i := range f.base.Idx {
		if i < f.N && f.base.Flags[j]&factMaterialized != 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	return first, last, first >= 0
}

// MissingRanges returns the ranges of indexes in [lo, hi] without a
// materialized partition, at most limit (truncated reports more).
func (f *StaleFacts) MissingRanges(lo, hi int64, limit int) (out []catalog.IndexRange, truncated bool) {
	hi = min(hi, f.N-1)
	next := lo
	for j := f.lower(lo); j < len(f.base.Idx) && f.base.Idx[j] <= hi; j++ {
		if f.base.Flags[j]&factMaterialized == 0 {
			continue
		}
		i := f.base.Idx[j]
		if i > next {
			if len(out) == limit {
				return out, true
			}
			out = append(out, catalog.IndexRange{Lo: next, Hi: i - 1})
		}
		next = i + 1
	}
	if next <= hi {
		if len(out) == limit {
			return out, true
		}
		out = append(out, catalog.IndexRange{Lo: next, Hi: hi})
	}
	return out, false
}

// StaleRanges returns the index ranges in [lo, hi] of partitions that are
// stale for any reason but NEVER_MATERIALIZED (with missing: for any
// reason), in order: what a "stale" backfill selection should snapshot.
func (f *StaleFacts) StaleRanges(lo, hi int64, now time.Time, missing bool) []catalog.IndexRange {
	hi = min(hi, f.N-1)
	var out []catalog.IndexRange
	add := func(a, b int64) {
		if a > b {
			return
		}
		if l := len(out); l > 0 && out[l-1].Hi+1 >= a {
			out[l-1].Hi = max(out[l-1].Hi, b)
			return
		}
		out = append(out, catalog.IndexRange{Lo: a, Hi: b})
	}
	ms := now.UnixMilli()
	var pf catalog.PartitionFacts
	next := lo
	for j := f.lower(lo); j < len(f.base.Idx) && f.base.Idx[j] <= hi; j++ {
		i := f.base.Idx[j]
		if missing {
			add(next, i-1)
		}
		next = i + 1
		f.facts(j, &pf)
		r := catalog.Classify(&pf, f.Asset.CodeVersion, ms)
		if r != catalog.Fresh && (missing || r != catalog.NeverMaterialized) {
			add(i, i)
		}
	}
	if missing {
		add(next, hi)
	}
	return out
}
