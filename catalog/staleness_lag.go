package catalog

import "time"

// FinalWindow reports whether windowEnd, the exclusive end of a partition's
// time window in scheme s (or in its time dimension), ends the scheme's
// final window: the scheme has a fixed end and no complete window follows
// this one. No partition newer than such a window can ever be built.
func FinalWindow(s Scheme, windowEnd time.Time) bool {
	ts, _, ok := SchemeTimeDim(s)
	if !ok || ts.End().IsZero() {
		return false
	}
	// The window starting at windowEnd would be the next one; it is not a
	// partition when it ends after the scheme's end.
	return ts.WindowStart(ts.IndexAt(windowEnd) + 1).After(ts.End())
}

// AssetLag is how far behind an asset is at now, measured from its latest
// fresh partition (the status board's lag, which the max_lag policy
// bounds): now − the end of that partition's time window (windowEnd), or,
// for a partition without one (hasWindow false), now − its materialization
// (matAt, Unix ms); never negative.
//
// An ended scheme is not behind: when the latest fresh partition is in the
// final window of a scheme with a fixed end (FinalWindow), nothing newer can
// ever be built, so the lag is 0 and ended is true however long ago the
// scheme ended. A missing, failed or stale last partition leaves an older
// latest fresh partition, whose lag keeps growing.
func AssetLag(s Scheme, windowEnd time.Time, hasWindow bool, matAt int64, now time.Time) (lag time.Duration, ended bool) {
	ref := time.UnixMilli(matAt)
	if hasWindow {
		if FinalWindow(s, windowEnd) {
			return 0, true
		}
		ref = windowEnd
	}
	return max(now.Sub(ref), 0), false
}
