package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tessera-dev/tessera/catalog"
)

// StaleInput is what the store needs to compute an asset's staleness: the
// workspace (for upstream definitions), asset ids and partition spaces.
type StaleInput struct {
	WS      *catalog.Workspace
	IDs     map[string]int64
	SpaceOf func(a *catalog.Asset) catalog.Space
	// MaxLag, when not zero, lets StaleFactsAt answer with facts computed
	// less than MaxLag ago at an older version when all that changed since
	// is backfill progress (attempts started or finished, runs planned):
	// many viewers of pages that list a running backfill's assets then
	// share one computation per MaxLag instead of one per controller step
	// (each costs about the asset's rows). Any other event (a taint, a
	// report, a backfill's state, a user's action) is shown at once. Zero:
	// facts exactly at the version (what a backfill's selection uses).
	MaxLag time.Duration
}

// PageStaleLag is the MaxLag of the pages: how far behind a running
// backfill's progress their staleness may be.
const PageStaleLag = 250 * time.Millisecond

type baseEntry struct {
	version int64
	code    string
	facts   *baseFacts
	gens    *blockGens // the stored blocks' gens facts was loaded at; nil once patched
}

type factsEntry struct {
	version int64
	at      time.Time // when it was computed (StaleInput.MaxLag)
	asset   *catalog.Asset
	n       int64
	upN     []int64
	bases   []*baseFacts // the asset's base facts, then each dependency's
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
	urgent   int64           // newest event id other than backfill progress (StaleInput.MaxLag)
	dirty    map[int64]int64 // asset id -> newest event id that changed it
	// Partition keys changed per asset (event id, key), so that a base entry
	// can be patched instead of reloaded; full[id] is the newest event that
	// changed the asset in a way that needs a full reload.
	changes map[int64][]keyChange
	full    map[int64]int64
	reloads atomic.Int64 // full reloads of a base entry (tests)
	persist stalePersister
	decoded atomic.Int64 // stored blocks decoded by full loads (tests)
	// full loads whose rows did not number statusRowCount, and so read
	// every status row (tests)
	miscounted atomic.Int64
	// base entries found unchanged by their blocks' gens instead of
	// reloaded (tests)
	revalidated atomic.Int64
}

// keyChange is a partition changed by event: key, or when key is "" the
// partitions of indexes lo..hi (an attempt's run of partitions, PartRun).
type keyChange struct {
	event  int64
	key    string
	lo, hi int64
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

// maxLoggedKeys bounds the changed partitions logged per asset for a patch
// (twice patchLimit, and at least this many): a running backfill changes
// runs of consecutive partitions, tens of thousands between two pages'
// computations of the facts (StaleInput.MaxLag), which a patch reads as a
// few ranges (patchRanges) for far less than a reload of every row.
const maxLoggedKeys = 1 << 18

// logLimit is how many changed partitions are logged for an asset of rows
// rows before its next computation reloads it instead.
func logLimit(rows int) int { return max(2*patchLimit(rows), maxLoggedKeys) }

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
	err := s.r.GetContext(ctx, &v, `SELECT MAX(id) FROM events`)
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
func (c *staleCache) sync(ctx context.Context, s *Store, in StaleInput) (int64, error) {
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
		c.dirtyAll, c.urgent, c.scanned = v, v, v
		c.mu.Unlock()
		return v, nil
	}
	ch, err := scanEvents(ctx, s, c.scanned, v, in)
	if err != nil {
		return 0, err
	}
	c.merge(ch, v)
	return v, nil
}

// assetKeyChange is a partition key of an asset changed by an event.
type assetKeyChange struct {
	asset int64
	keyChange
}

// eventChanges is what a run of events changed: every asset (all, the
// last such event), assets (dirty), assets to reload in full (full), and
// partition keys (changed); each with the id of the event.
type eventChanges struct {
	all     int64
	urgent  int64 // the last event other than backfill progress
	dirty   map[int64]int64
	full    map[int64]int64
	changed []assetKeyChange
	in      StaleInput
	spaces  map[int64]catalog.Space // runSpace's, by asset id (nil: none)
}

// scanEvents reads the events after id from up to id to (in: the assets,
// their ids and spaces) and what they changed.
func scanEvents(ctx context.Context, s *Store, from, to int64, in StaleInput) (*eventChanges, error) {
	ids := in.IDs
	rows, err := s.r.QueryContext(ctx, `SELECT id, type, subject, CASE WHEN type IN (?, ?, 'partitions.reported', 'partition.tainted', 'partition.taint_cleared') THEN payload ELSE '' END
		FROM events WHERE id > ? AND id <= ? ORDER BY id`, EvAttemptsStarted, EvAttemptsFinished, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ch := &eventChanges{dirty: map[int64]int64{}, full: map[int64]int64{}, in: in}
	for rows.Next() {
		var id int64
		var typ, subject, payload string
		if err := rows.Scan(&id, &typ, &subject, &payload); err != nil {
			return nil, err
		}
		ch.add(id, typ, subject, payload, ids)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return ch, nil
}

func (ch *eventChanges) addKey(asset, id int64, key string) {
	ch.changed = append(ch.changed, assetKeyChange{asset, keyChange{event: id, key: key}})
}

// addRun records that event id changed asset's partitions lo..hi (joined
// to the last change when it is of the same event and ends just before).
func (ch *eventChanges) addRun(asset, id, lo, hi int64) {
	if n := len(ch.changed) - 1; n >= 0 {
		if l := &ch.changed[n]; l.asset == asset && l.event == id && l.key == "" && l.hi+1 == lo {
			l.hi = hi
			return
		}
	}
	ch.changed = append(ch.changed, assetKeyChange{asset, keyChange{event: id, lo: lo, hi: hi}})
}

// runSpace is the space of asset id when its partitions can be recorded
// by runs of indexes: one time dimension, where an index is a window, so
// that a run whose first and last keys are at its first and last indexes
// holds the windows between (runsHold); nil otherwise (keys are recorded).
func (ch *eventChanges) runSpace(id int64) catalog.Space {
	if sp, ok := ch.spaces[id]; ok {
		return sp
	}
	if ch.spaces == nil {
		ch.spaces = map[int64]catalog.Space{}
	}
	var sp catalog.Space
	if ch.in.WS != nil && ch.in.SpaceOf != nil {
		for _, a := range ch.in.WS.Assets {
			if ch.in.IDs[a.Key] != id {
				continue
			}
			if _, _, isTime := catalog.SchemeTimeDim(a.Scheme); isTime {
				sp = ch.in.SpaceOf(a)
				if _, multi := sp.(interface{ DimSpaces() []catalog.Space }); multi {
					sp = nil
				}
			}
			break
		}
	}
	ch.spaces[id] = sp
	return sp
}

// runsHold says whether every run's first and last keys are at its first
// and last indexes in sp: the indexes the attempt recorded are the
// space's now (a scheme changed since would move them).
func runsHold(sp catalog.Space, runs []PartRun) bool {
	for _, r := range runs {
		lo, err := sp.Index(r.First)
		if err != nil || lo != r.Lo {
			return false
		}
		hi, err := sp.Index(r.Last)
		if err != nil || hi != r.Hi {
			return false
		}
	}
	return true
}

// addAttempts records what the attempts of an attempts event id changed:
// runs of indexes where they hold, keys otherwise. It returns false for a
// payload it cannot skim.
func (ch *eventChanges) addAttempts(id int64, payload string) bool {
	var atts, keyed []SkimmedAttempt
	if !SkimAttemptRuns(payload, func(a SkimmedAttempt) { atts = append(atts, a) }) {
		return false
	}
	for j, a := range atts {
		ch.dirty[a.AssetID] = id
		if sp := ch.runSpace(a.AssetID); sp != nil && !a.NoRuns && runsHold(sp, a.Runs) {
			for _, r := range a.Runs {
				ch.addRun(a.AssetID, id, r.Lo, r.Hi)
			}
			continue
		}
		if keyed == nil && (!SkimAttempts(payload, true, func(k SkimmedAttempt) { keyed = append(keyed, k) }) || len(keyed) != len(atts)) {
			return false
		}
		for _, k := range keyed[j].Keys {
			ch.addKey(a.AssetID, id, k)
		}
	}
	return true
}

// add records what event id (its type, subject and, for the events that
// name partitions, payload) changed.
func (ch *eventChanges) add(id int64, typ, subject, payload string, ids map[string]int64) {
	if !backfillProgress(typ) {
		ch.urgent = id
	}
	switch {
	case eventIgnored(typ, subject):
	case typ == "asset.watermark":
	case strings.HasPrefix(subject, "asset:"):
		aid, ok := ids[strings.TrimPrefix(subject, "asset:")]
		if !ok {
			return
		}
		ch.dirty[aid] = id
		if typ == "asset.changed" || typ == "asset.added" || typ == "asset.removed" {
			// Its scheme may have changed and its partitions' indexes
			// with it (reindexAsset): a memoized entry's indexes are
			// the old ones.
			ch.full[aid] = id
			return
		}
		var p struct {
			Partition string `json:"partition"`
			Items     []struct {
				Partition string `json:"partition"`
			} `json:"items"`
		}
		switch {
		case payload == "" || json.Unmarshal([]byte(payload), &p) != nil:
			ch.full[aid] = id
		case p.Partition != "":
			ch.addKey(aid, id, p.Partition)
		default:
			for _, it := range p.Items {
				ch.addKey(aid, id, it.Partition)
			}
		}
	case payload != "" && ch.addAttempts(id, payload):
	case payload != "":
		// Not skimmed (SkimAttempts): decoded.
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
			ch.all = id
			return
		}
		for _, a := range p.Attempts {
			ch.dirty[a.AssetID] = id
			for _, refs := range [][]ref{a.Parts, a.Failures, a.UpstreamFailed} {
				for _, r := range refs {
					ch.addKey(a.AssetID, id, r.Key)
				}
			}
		}
	default:
		ch.all = id
	}
}

// backfillProgress says whether events of type typ are a backfill's
// progress, which pages may show up to StaleInput.MaxLag late.
func backfillProgress(typ string) bool {
	return typ == EvAttemptsStarted || typ == EvAttemptsFinished || typ == EvRunsPlanned
}

// merge records the changes ch of the events up to version v in the cache.
func (c *staleCache) merge(ch *eventChanges, v int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch.all > c.dirtyAll {
		c.dirtyAll = ch.all
	}
	c.urgent = max(c.urgent, ch.urgent)
	for k, id := range ch.dirty {
		c.dirty[k] = id
	}
	for k, id := range ch.full {
		c.full[k] = id
	}
	for _, kc := range ch.changed {
		// A partition usually changes twice per attempt (started,
		// finished): the log holds up to twice the keys a patch takes.
		switch e, cached := c.base[kc.asset]; {
		case !cached:
			// Not loaded: any entry made meanwhile, at an older version,
			// must be reloaded in full rather than patched.
			c.full[kc.asset] = kc.event
		case len(c.changes[kc.asset]) < logLimit(len(e.facts.Idx)):
			c.changes[kc.asset] = append(c.changes[kc.asset], kc.keyChange)
		default:
			c.full[kc.asset] = kc.event
			c.changes[kc.asset] = nil
		}
	}
	c.scanned = v
}

// cleanSince reports whether asset id is unchanged after version.
func (c *staleCache) cleanSince(id, version int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dirtyAll <= version && c.dirty[id] <= version
}

// progressOnlySince reports whether every event after version was
// backfill progress.
func (c *staleCache) progressOnlySince(version int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.urgent <= version
}

// PageVersion is the newest event other than a backfill's progress that
// SyncStaleness has read: a page model shared by the key of PageVersion
// for a short time shows a running backfill's progress at most that late
// and any other change at once.
func (s *Store) PageVersion() int64 {
	c := s.staleCache()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.urgent
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
	return s.staleCache().sync(ctx, s, in)
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
	if ok && e.asset == a && e.n == n && slices.Equal(e.upN, upN) {
		clean := c.cleanSince(id, e.version)
		for _, d := range a.Deps {
			clean = clean && c.cleanSince(in.IDs[d.Asset], e.version)
		}
		if clean {
			return e.facts, nil
		}
		if in.MaxLag > 0 && time.Since(e.at) < in.MaxLag && c.progressOnlySince(e.version) {
			// Only backfill progress since, and recently computed.
			return e.facts, nil
		}
	}
	bases := make([]*baseFacts, 1+len(a.Deps))
	var err error
	for d := range bases {
		bid, code, bsp := id, a.CodeVersion, sp
		if d > 0 {
			bid, code, bsp = in.IDs[a.Deps[d-1].Asset], ups[d-1].CodeVersion, upSp[d-1]
		}
		if bases[d], err = s.baseFactsAt(ctx, bid, code, bsp, version); err != nil {
			return nil, err
		}
	}
	if ok && e.asset == a && e.n == n && slices.Equal(e.upN, upN) && slices.Equal(e.bases, bases) {
		// The same inputs (base facts kept after an event of unknown
		// effect, their blocks unchanged): the same facts, as a new value.
		f := *e.facts
		c.mu.Lock()
		c.facts[a.Key] = factsEntry{version: version, at: time.Now(), asset: a, n: n, upN: upN, bases: bases, facts: &f}
		c.mu.Unlock()
		return &f, nil
	}
	base := bases[0]
	f := &StaleFacts{Asset: a, ID: id, N: n, base: base, upSpaces: upSp, counted: &countMemo{}}
	rows := len(base.Idx)
	f.UpAt = make([]int64, rows)
	f.upDep = make([]int16, rows)
	f.upIdx = make([]int64, rows)
	for j := range f.upDep {
		f.upDep[j] = -1
	}
	for d, dep := range a.Deps {
		f.applyUpstream(int16(d), catalog.NewIndexMapper(dep, a.Scheme, sp, ups[d].Scheme, upSp[d]), bases[d+1], upN[d])
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
	c.facts[a.Key] = factsEntry{version: version, at: time.Now(), asset: a, n: n, upN: upN, bases: bases, facts: f}
	c.mu.Unlock()
	return f, nil
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
	var one [1]catalog.IndexRange
	lastU := int64(-2)
	next := 0 // where the last range's rows ended
	for k, u := range ub.Idx {
		if u >= upN || ub.Flags[k]&factMaterialized == 0 {
			continue
		}
		at := ub.MatAt[k]
		var rs []catalog.IndexRange
		switch {
		case u == lastU:
			rs = last
		case m.One != nil:
			// No slice per partition.
			if r, ok := m.One(u); ok {
				one[0] = r
				rs = one[:]
			}
			last, lastU = rs, u
		default:
			rs = m.Map(u)
			last, lastU = rs, u
		}
		for _, r := range rs {
			// Ranges mostly follow each other: the first row of this one is
			// often where the last one's rows ended.
			j := next
			if (j > 0 && idx[j-1] >= r.Lo) || (j < len(idx) && idx[j] < r.Lo) {
				j = sort.Search(len(idx), func(i int) bool { return idx[i] >= r.Lo })
			}
			for ; j < len(idx) && idx[j] <= r.Hi; j++ {
				set(j, at, u)
			}
			next = j
		}
	}
}
