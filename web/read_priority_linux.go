package web

import "syscall"

// lowerThreadPriority raises the calling thread's nice value by n: on
// Linux, setpriority with a thread id sets that thread's alone. Raising it
// needs no privilege.
func lowerThreadPriority(n int) error {
	tid := syscall.Gettid()
	cur, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return err
	}
	// The raw syscall answers 20 - nice (1..40), not the nice value.
	return syscall.Setpriority(syscall.PRIO_PROCESS, tid, min(20-cur+n, MaxReadNice))
}

// onMainThread says whether the calling thread is the process's main one
// (its thread id is the process id).
func onMainThread() bool { return syscall.Gettid() == syscall.Getpid() }
