package views

// RunsPage is /runs: the chunk runs of every backfill with the filters the
// form shows (as typed: a bad one is shown back with Error beside it).
type RunsPage struct {
	Assets, States                   []string
	Asset, State, Backfill, From, To string
	// Error is what is wrong with the filter ErrorField (the 400's).
	Error, ErrorField string
	Filtered          bool
	Rows              []RunRow
	Next, First       string
}

// RunRow is one run of /runs.
type RunRow struct {
	ID, Href               string
	Asset, AssetHref       string
	Chunk                  int64
	Keys                   string
	Partitions             int64
	State                  string
	Attempts, MaxAttempts  int64
	Queued, Started        string
	Duration               string
	Backfill, BackfillHref string
	LaunchedBy, Error      string
}

// Invalid is the aria-invalid of filter name: "true" on the one the error
// is about.
func (m RunsPage) Invalid(name string) string {
	if m.ErrorField == name {
		return "true"
	}
	return "false"
}
