//go:build !linux

package web

import "errors"

// lowerThreadPriority: only Linux sets one thread's priority; elsewhere the
// reads run at the process's.
func lowerThreadPriority(int) error {
	return errors.New("this system cannot lower one thread's priority")
}

// onMainThread: no worker starts elsewhere than Linux (see above).
func onMainThread() bool { return false }
