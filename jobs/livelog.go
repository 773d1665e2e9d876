package jobs

import "sync"

// liveLogs holds the output buffers of the command attempts running in this
// process, by run id, so that the run page can tail a log before the attempt
// ends and its log is stored.
var liveLogs sync.Map // run id → *tailBuffer

// trackLiveLog registers b as run's live output; call the result when the
// attempt ends.
func trackLiveLog(runID string, b *tailBuffer) func() {
	liveLogs.Store(runID, b)
	return func() { liveLogs.CompareAndDelete(runID, b) }
}

// LiveLog returns the output so far of run's attempt in progress on this
// server (its last LogLimit bytes), and whether one is in progress.
func (e *Engine) LiveLog(runID string) (string, bool) {
	v, ok := liveLogs.Load(runID)
	if !ok {
		return "", false
	}
	return v.(*tailBuffer).String(), true
}
