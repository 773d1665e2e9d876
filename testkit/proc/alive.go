package proc

import (
	"fmt"
	"os"
	"strings"
)

// Alive reports whether any thread of pid still runs (a zombie,
// exited but not yet waited for, does not). Not the group leader's state
// alone: after a SIGKILL the leader is a zombie while the other threads
// still exit, and until the last one has, the process's sockets stay open
// (a server at nice 10 for its reads, under make test's load, still held
// its port when TestClusterCrashThreeInstances started it again).
func Alive(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			continue // exited meanwhile
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 0 && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}
