package views

import (
	"net/url"
	"strings"
)

// ScheduleHref is a schedule page's path.
func ScheduleHref(name string) string { return "/schedules/" + url.PathEscape(name) }

// ScheduleCreator is the prefix of the CreatedBy of a backfill a
// schedule's tick launched ("schedule:NAME").
const ScheduleCreator = "schedule:"

// ScheduleOf is the schedule that launched a backfill, from its CreatedBy
// ("" when a person or a token did).
func ScheduleOf(createdBy string) string { return creatorNamed(createdBy, ScheduleCreator) }

// creatorNamed is the name after prefix ("schedule:", "sensor:") of a
// backfill's CreatedBy, or "" when it has not that prefix.
func creatorNamed(createdBy, prefix string) string {
	name, ok := strings.CutPrefix(createdBy, prefix)
	if !ok {
		return ""
	}
	return name
}

// Schedule states as the pages show them.
const (
	ScheduleRunning  = "running"
	SchedulePaused   = "paused"
	ScheduleDisabled = "disabled"
)

// ScheduleRow is one schedule on the Automation page.
type ScheduleRow struct {
	Name, Href       string
	State            string // ScheduleRunning, SchedulePaused or ScheduleDisabled
	Cron, Timezone   string
	Assets           []string
	NextTick         string // in its zone, with UTC; "" when none
	LastOutcome      string // launched, queued, skipped, failed; "" before the first tick
	LastTickAt       string
	LastReason       string
	Strip            []TickCell // recent outcomes, oldest first
	Launched, Failed int64
	Skipped          int64
	PrunedTicks      int64 // older than the retention, deleted
}

// TickCell is one tick in a strip of recent outcomes.
type TickCell struct {
	Outcome, Title string
}

// AutomationPage lists the workspace's schedules.
type AutomationPage struct {
	Schedules []ScheduleRow
	Sensors   []SensorRow
}

// ScheduleAction is a button of the schedule page: the last part of its
// form's path.
type ScheduleAction string

// The schedule page's buttons.
const (
	ScheduleActionPause   ScheduleAction = "pause"
	ScheduleActionResume  ScheduleAction = "resume"
	ScheduleActionTrigger ScheduleAction = "trigger"
)

// ScheduleButton is one button of the schedule page.
type ScheduleButton struct {
	Name        ScheduleAction
	Label, Href string
}

// NextTick is an upcoming tick in the schedule's zone and in UTC.
type NextTick struct {
	Local string
	// UTC is the time in UTC when the schedule's zone is not UTC ("" when
	// it is: Local says it, and the table has no second UTC column).
	UTC string
	// Yours is the time in the reader's display zone when that is neither
	// the schedule's zone nor UTC ("" otherwise).
	Yours string
}

// TickPreviewView is what the next tick would launch.
type TickPreviewView struct {
	TickAt     string // in the zone, with UTC
	Skip       string // why it would launch nothing
	Note       string // paused or disabled
	Selection  string // the request's selector in words
	Partitions int64
	Chunks     int64
	Assets     []KV      // asset → partitions
	Estimate   *Estimate // nil when it would launch nothing
}

// TickRow is one tick in a schedule's history.
// ScheduledUTC is the scheduled time in the other zones shown (UTC when the
// schedule's zone is not UTC, the reader's when that is neither; "" when
// ScheduledFor says it all).
type TickRow struct {
	ID, ScheduledFor, ScheduledUTC, EvaluatedAt string
	Outcome, Reason                             string
	Backfill                                    *Link
	Manual                                      bool
	Actor                                       string
}

// ScheduleDetail is a schedule's page.
type ScheduleDetail struct {
	ScheduleRow
	Retention  string // how long ticks are kept, in words ("90 days")
	Definition []KV
	PausedBy   string // "by NAME at TIME" while paused
	NextTicks  []NextTick
	Preview    TickPreviewView
	Ticks      []TickRow
	Outcomes   []string // the outcome filter's values
	Outcome    string   // the filter, "" = every outcome
	Next       string   // href of the next (older) page, "" = last page
	First      string   // href of the newest page when not on it
	Buttons    []ScheduleButton
	CSRF       string
	Message    string // a refusal, shown on top
	Notice     string // what the last action did (flash)
	NoticeLink *Link
}
