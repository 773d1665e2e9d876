package views

import (
	"net/url"
)

// SensorHref is a sensor page's path.
func SensorHref(name string) string { return "/sensors/" + url.PathEscape(name) }

// SensorCreator is the prefix of the CreatedBy of a backfill a sensor
// launched ("sensor:NAME").
const SensorCreator = "sensor:"

// SensorOf is the sensor that launched a backfill created by createdBy,
// or "".
func SensorOf(createdBy string) string { return creatorNamed(createdBy, SensorCreator) }

// Sensor states as the pages show them.
const (
	SensorStateOK       = "OK"
	SensorStateError    = "ERROR"
	SensorStatePaused   = "PAUSED"
	SensorStateDisabled = "DISABLED"
)

// SensorRow is one sensor on the Sensors page.
type SensorRow struct {
	Name, Href string
	Kind       string // push or poll
	State      string // SensorStateOK, ...
	Assets     []string
	Evaluator  string // "command every 30s (timeout 1m)"; "" for push
	Last       string // the last evaluation or event, in words; "" when none
	LastAt     string
	LastError  string
	Events     int64
	Launches   int64
	Evals      int64
	Failures   int64
	// Pruned: evaluations and events older than the retention, deleted.
	PrunedEvals, PrunedEvents int64
	// Strip: the outcomes of its newest evaluations or events, oldest
	// first (the Automation page's strip; empty on the Sensors page).
	Strip []TickCell
}

// SensorsPage lists the workspace's sensors.
type SensorsPage struct {
	Sensors []SensorRow
}

// SensorAction is a button of the sensor page: the last part of its form's
// path.
type SensorAction string

// The sensor page's buttons.
const (
	SensorActionPause    SensorAction = "pause"
	SensorActionResume   SensorAction = "resume"
	SensorActionEvaluate SensorAction = "evaluate"
	SensorActionDryRun   SensorAction = "dry-run"
)

// SensorButton is one button of the sensor page.
type SensorButton struct {
	Name        SensorAction
	Label, Href string
}

// EvalRequestRow is one run request of an evaluation and what became of it.
type EvalRequestRow struct {
	Assets    string
	Selection string
	RunKey    string
	Backfill  *Link
	Skipped   string
	Preview   string // a dry run: what it would build
}

// EvaluationRow is one recorded evaluation, dry run or cursor reset.
type EvaluationRow struct {
	ID           int64
	Kind         string // evaluation, dry_run, reset
	StartedAt    string
	Duration     string
	CursorBefore string
	CursorAfter  string
	Requests     []EvalRequestRow
	SkipReason   string
	Error        string
	LogTail      string
	Actor        string
}

// SensorEventRow is one pushed event.
type SensorEventRow struct {
	MessageID, ReceivedAt, Outcome, Reason, Actor string
	Backfill                                      *Link
}

// RunKeyRow is one run key a sensor launched.
type RunKeyRow struct {
	RunKey, CreatedAt string
	Backfill          Link
}

// SensorDetail is a sensor's page.
type SensorDetail struct {
	SensorRow
	Retention   string // how long evaluations and events are kept, in words ("90 days")
	Definition  []KV
	PausedBy    string // "by NAME at TIME" while paused
	Cursor      string
	HasCursor   bool
	NextEval    string
	Evaluations []EvaluationRow
	EvalNext    string // href of the next (older) page of evaluations
	EvalFirst   string // href of the newest page when not on it
	Events      []SensorEventRow
	EventsNext  string
	EventsFirst string
	RunKeys     []RunKeyRow
	Prefix      string // the run key search
	KeysNext    string
	Buttons     []SensorButton
	CanReset    bool // admins: the cursor form
	CSRF        string
	Message     string // a refusal, shown on top
	Notice      string // what the last action did (flash)
	NoticeLink  *Link
}
