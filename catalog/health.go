package catalog

// Health is the one word every page, badge, export, the API and the CLI use
// for a partition's state. Each partition has exactly one:
//
//   - in_progress: an attempt is building it now (whatever data it has).
//   - fresh: not being built; its data (the last successful
//     materialization) is there and no staleness reason applies to it.
//   - stale: not being built; its data is there but out of date (tainted,
//     code changed, upstream changed or late for its freshness policy).
//   - failed: not being built; it has no data and its last attempt failed.
//   - missing: not being built; it has no data and no attempt failed
//     (never attempted).
//
// A partition whose last attempt failed but whose earlier materialization
// is still there is fresh or stale, never failed: its data can be read.
// Those are counted once more in HealthCounts.LastAttemptFailed and read
// "Fresh · last attempt failed".
//
// Staleness reasons (StaleReason) explain stale partitions; the reason
// NEVER_MATERIALIZED is the failed and missing partitions together.
type Health string

// The health of a partition.
const (
	HealthFresh      Health = "fresh"
	HealthStale      Health = "stale"
	HealthFailed     Health = "failed"
	HealthInProgress Health = "in_progress"
	HealthMissing    Health = "missing"
)

// Healths lists the health words in legend order.
var Healths = []Health{HealthFresh, HealthStale, HealthFailed, HealthInProgress, HealthMissing}

// HealthOf words a partition's health from its last attempt's status
// ("materialized", "failed", "in_progress", "" when never attempted), whether
// it has data, and its staleness reason (Classify). lastFailed reports a
// partition whose data is there although its last attempt failed.
func HealthOf(lastAttempt string, materialized bool, r StaleReason) (h Health, lastFailed bool) {
	switch {
	case lastAttempt == "in_progress":
		return HealthInProgress, false
	case materialized && r == Fresh:
		return HealthFresh, lastAttempt == "failed"
	case materialized && r != NeverMaterialized:
		return HealthStale, lastAttempt == "failed"
	case lastAttempt == "failed":
		return HealthFailed, false
	}
	return HealthMissing, false
}

// HealthCounts counts partitions per health: the numbers of every health
// bar, the status board, the exports, the API and the CLI.
type HealthCounts struct {
	Fresh, Stale, Failed, InProgress, Missing int64
	// StaleBy splits Stale by reason (TAINTED, CODE_CHANGED,
	// UPSTREAM_CHANGED, FRESHNESS).
	StaleBy map[StaleReason]int64
	// LastAttemptFailed counts the fresh and stale partitions whose last
	// attempt failed (their data is still there).
	LastAttemptFailed int64
}

// Add counts one partition.
func (c *HealthCounts) Add(h Health, r StaleReason, lastFailed bool) {
	c.AddN(h, r, lastFailed, 1)
}

// AddN counts n partitions of one health (and reason, for stale ones).
func (c *HealthCounts) AddN(h Health, r StaleReason, lastFailed bool, n int64) {
	switch h {
	case HealthFresh:
		c.Fresh += n
	case HealthStale:
		c.Stale += n
		if c.StaleBy == nil {
			c.StaleBy = map[StaleReason]int64{}
		}
		c.StaleBy[r] += n
	case HealthFailed:
		c.Failed += n
	case HealthInProgress:
		c.InProgress += n
	default:
		c.Missing += n
	}
	if lastFailed {
		c.LastAttemptFailed += n
	}
}

// Total is the number of partitions counted.
func (c HealthCounts) Total() int64 {
	return c.Fresh + c.Stale + c.Failed + c.InProgress + c.Missing
}

// Materialized counts the partitions with data that are not being built
// (fresh and stale).
func (c HealthCounts) Materialized() int64 { return c.Fresh + c.Stale }

// NeverMaterialized counts the partitions without data that are not being
// built (failed and missing): the NEVER_MATERIALIZED reason.
func (c HealthCounts) NeverMaterialized() int64 { return c.Failed + c.Missing }

// Of returns the count of one health.
func (c HealthCounts) Of(h Health) int64 {
	switch h {
	case HealthFresh:
		return c.Fresh
	case HealthStale:
		return c.Stale
	case HealthFailed:
		return c.Failed
	case HealthInProgress:
		return c.InProgress
	case HealthMissing:
		return c.Missing
	}
	return 0
}

// Plus adds o to c.
func (c HealthCounts) Plus(o HealthCounts) HealthCounts {
	c.Fresh += o.Fresh
	c.Stale += o.Stale
	c.Failed += o.Failed
	c.InProgress += o.InProgress
	c.Missing += o.Missing
	c.LastAttemptFailed += o.LastAttemptFailed
	if len(o.StaleBy) > 0 {
		by := make(map[StaleReason]int64, len(c.StaleBy)+len(o.StaleBy))
		for r, n := range c.StaleBy {
			by[r] += n
		}
		for r, n := range o.StaleBy {
			by[r] += n
		}
		c.StaleBy = by
	}
	return c
}
