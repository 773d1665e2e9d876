package jobs

import (
	"sync"
	"time"
)

// RecoveryHealth says whether crash recovery is whole: while Degraded, the
// command executor could not keep, beside an attempt's report, the files
// recovery after a crash reads (the process group to kill, the output to
// keep as the interrupted attempt's log), so after a crash the processes of
// such an attempt would keep running and its log would be lost. Since is the
// first failure of the spell, Last the latest; a later attempt whose files
// were written clears it.
type RecoveryHealth struct {
	Degraded    bool
	Since, Last time.Time
	Failures    int64 // attempts whose files could not be written, since the engine started
}

type recoveryHealth struct {
	mu sync.Mutex
	st RecoveryHealth
}

// CrashRecoveryHealth reports whether crash recovery is degraded.
func (e *Engine) CrashRecoveryHealth() RecoveryHealth {
	e.recovery.mu.Lock()
	defer e.recovery.mu.Unlock()
	return e.recovery.st
}

// noteRecovery records whether attempt w's crash-recovery files were
// written: err is the first that failed (what names the file's job), nil
// when they all were. A failure is logged as a warning: the attempt still
// runs, but a crash would leave its processes behind.
func (e *Engine) noteRecovery(w Work, what string, err error) {
	now := e.Now()
	h := &e.recovery
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.st.Degraded = false
		return
	}
	if !h.st.Degraded {
		h.st.Degraded, h.st.Since = true, now
	}
	h.st.Last = now
	h.st.Failures++
	if e.Log != nil {
		e.Log.Warn("crash recovery degraded: cannot "+what+"; after a crash this attempt's processes would not be killed nor its output kept",
			"run", w.RunID, "attempt", w.Attempt, "asset", w.Asset, "err", err)
	}
}
