package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// Bounds of a schedule's backfills (the same as a backfill request's).
const (
	MaxScheduleChunkSize      = 100_000
	MaxScheduleConcurrentRuns = 10_000
)

// Overlap says what a tick does while the backfill of the schedule's
// previous tick still runs.
const (
	OverlapSkip  = "skip"  // record the tick as skipped (the default)
	OverlapQueue = "queue" // launch it once the previous one has ended
	OverlapAllow = "allow" // launch it at once, beside the previous one
)

// Overlaps lists the overlap values.
var Overlaps = []string{OverlapSkip, OverlapQueue, OverlapAllow}

// Target kinds: which partitions a tick targets.
const (
	// TargetClosedWindows: the windows of time-partitioned assets that
	// closed since the previous tick (the default for time assets).
	TargetClosedWindows = "closed_windows"
	// TargetMissingWithin: the missing or failed partitions whose windows
	// closed within MissingWithin before the tick.
	TargetMissingWithin = "missing_within"
	// TargetAll: every partition of static or dynamic assets.
	TargetAll = "all"
)

// Default catch-up: ticks missed within the last day, at most one.
var DefaultCatchup = Catchup{Window: 24 * time.Hour, MaxTicks: 1}

// Schedule launches a backfill of its assets at every tick of its cron.
type Schedule struct {
	Name          string
	Cron          *Cron
	CronExpr      string
	Timezone      string // "" is UTC
	Assets        []string
	Target        string // TargetClosedWindows, TargetMissingWithin or TargetAll
	MissingWithin time.Duration
	ChunkSize     int64 // 0: one chunk per partition window as the backfill default
	MaxConcurrent int64 // 0: the backfill default
	Priority      int64 // MinPriority to MaxPriority
	Overlap       string
	Catchup       Catchup
	Enabled       bool
	Line          int
}

// MinPriority and MaxPriority bound a backfill's priority (higher runs
// first; default 0), whoever launches it: the API, the CLI, the form, a
// schedule or a sensor (documented in README).
const (
	MinPriority = -1000
	MaxPriority = 1000
)

// Hash identifies the schedule's definition: ticks record it, so that a
// tick's history says which definition launched it.
func (s *Schedule) Hash() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00%d\x00%d\x00%d\x00%d\x00%s\x00%d\x00%d\x00%t",
		s.Name, s.CronExpr, s.Timezone, strings.Join(s.Assets, ","), s.Target, s.MissingWithin,
		s.ChunkSize, s.MaxConcurrent, s.Priority, s.Overlap, s.Catchup.Window, s.Catchup.MaxTicks, s.Enabled)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// Schedule returns the schedule named name, or nil.
func (w *Workspace) Schedule(name string) *Schedule { return byName(w.Schedules, name) }

// ScheduleNames lists the names of the workspace's schedules, in file order.
func (w *Workspace) ScheduleNames() []string { return namesOf(w.Schedules) }

func (s *Schedule) itemName() string { return s.Name }
