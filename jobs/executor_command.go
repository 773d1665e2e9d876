package jobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// LogLimit is how much of an attempt's output is kept (the tail).
const LogLimit = 64 << 10

// CommandExecutor runs the asset's argv (no shell unless shell: true) with
// the work in TESSERA_* environment variables; the server's own TESSERA_*
// settings (keys, tokens) are not passed on. The command may write one JSON
// line per partition to $TESSERA_REPORT; exit 0 without a report means every
// partition materialized. The command runs in its own process group: the
// attempt ends when its main process exits, and then the rest of the group
// is killed, as on cancel or timeout. While it runs, the group and its start
// time are kept in a file beside the report (procPath), so that recovery
// after a crash can kill what is left of it (killOrphans).
type CommandExecutor struct{}

// commandWaitDelay is how long the output of a command's leftover children
// is still read after its main process exited.
const commandWaitDelay = 2 * time.Second

// Execute implements Executor.
func (CommandExecutor) Execute(ctx context.Context, w Work) Result {
	if w.Def == nil || len(w.Def.Executor.Command) == 0 {
		return Result{Err: errors.New("the asset has no command")}
	}
	ex := w.Def.Executor
	var cmd *exec.Cmd
	if ex.Shell {
		cmd = exec.Command("/bin/sh", "-c", strings.Join(ex.Command, " "))
	} else {
		cmd = exec.Command(ex.Command[0], ex.Command[1:]...)
	}
	cmd.Dir = ex.Dir
	if err := os.MkdirAll(filepath.Dir(w.ReportPath), 0o755); err != nil {
		return Result{Err: fmt.Errorf("report directory: %w", err)}
	}
	_ = os.Remove(w.ReportPath)
	cmd.Env = commandEnv(os.Environ(), ex.Env, w)
	out := &tailBuffer{max: LogLimit}
	// The output is also kept in a file beside the report while the command
	// runs, so that after a crash the interrupted attempt still has its log
	// (recovery reads it: crashLog).
	outFile := outputPath(w.ReportPath)
	defer os.Remove(outFile) // also what a failed create may have left
	f, outErr := os.Create(outFile)
	if outErr == nil {
		out.file = f
		defer f.Close() // (runs before the remove)
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Wait returns at most this long after the main process exited, even if
	// a child it left behind still holds stdout or stderr open.
	cmd.WaitDelay = commandWaitDelay
	defer trackLiveLog(w, out)() // the run page tails it (livelog.go)
	// Own process group (killed whole on cancel); killed if the server dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return Result{Err: fmt.Errorf("start %s: %w", ex.Command[0], err)}
	}
	w.noteBegan()
	pgid := cmd.Process.Pid
	procFile := procPath(w.ReportPath)
	defer os.Remove(procFile)
	switch err := writeProcFile(procFile, pgid); {
	case err != nil:
		fmt.Fprintf(out, "tessera: cannot record the process group for crash recovery: %v\n", err)
		w.noteRecovery("record the attempt's process group", err)
	case outErr != nil:
		fmt.Fprintf(out, "tessera: cannot keep the output for crash recovery: %v\n", outErr)
		w.noteRecovery("keep the attempt's output", outErr)
	default:
		w.noteRecovery("", nil)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	known := make(map[string]bool, len(w.Partitions))
	for _, p := range w.Partitions {
		known[p] = true
	}
	var err error
	select {
	case err = <-waited:
	case <-ctx.Done():
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-waited:
		case <-time.After(2 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-waited
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // stragglers of the group
		res := Result{Err: context.Cause(ctx), Log: out.String()}
		readReportChecked(w.ReportPath, known).apply(&res, w.Partitions)
		return res
	}
	// The main process exited: what it left running is killed now, before
	// the report is read and the attempt recorded.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	if errors.Is(err, exec.ErrWaitDelay) {
		// Exit 0, but a child kept the output open: its output is cut.
		err = nil
		fmt.Fprintf(out, "\ntessera: the command exited, but processes it left behind still held its output %s later; they were killed\n", commandWaitDelay)
	}
	res := Result{Log: out.String()}
	if err != nil {
		res.Err = fmt.Errorf("command failed: %v", err)
	}
	readReportChecked(w.ReportPath, known).apply(&res, w.Partitions)
	return res
}

// commandEnv is a command's environment: the server's without its own
// TESSERA_* settings (session keys, tokens, …), the asset's env, then the
// description of the work.
func commandEnv(inherited []string, assetEnv map[string]string, w Work) []string {
	env := withoutServerSettings(inherited, len(assetEnv)+10)
	for k, v := range assetEnv {
		env = append(env, k+"="+v)
	}
	return append(env,
		"TESSERA_ASSET="+w.Asset,
		"TESSERA_PARTITIONS="+strings.Join(w.Partitions, "\n"),
		"TESSERA_RANGE_START="+w.RangeStart,
		"TESSERA_RANGE_END="+w.RangeEnd,
		"TESSERA_RUN_ID="+w.RunID,
		"TESSERA_RUN_KEY="+w.RunKey,
		"TESSERA_ATTEMPT="+strconv.FormatInt(w.Attempt, 10),
		"TESSERA_IDEMPOTENCY_KEY="+w.IdempotencyKey,
		"TESSERA_REPORT="+w.ReportPath,
		"TESSERA_CODE_VERSION="+w.CodeVersion,
	)
}

// withoutServerSettings is the server's environment inherited without its
// own TESSERA_* settings (session keys, tokens, the database URL), with
// room for extra more.
func withoutServerSettings(inherited []string, extra int) []string {
	env := make([]string, 0, len(inherited)+extra)
	for _, kv := range inherited {
		if !strings.HasPrefix(kv, "TESSERA_") {
			env = append(env, kv)
		}
	}
	return env
}

// outputPath is the file beside an attempt's report that holds its output
// while the command runs.
func outputPath(reportPath string) string {
	return strings.TrimSuffix(reportPath, ".jsonl") + ".out"
}

// crashLog returns the output an attempt's command had written when the
// server stopped (its output file, at most LogLimit bytes from the end), and
// removes the file; "" when there is none.
func crashLog(reportPath string) string {
	path := outputPath(reportPath)
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	_ = os.Remove(path)
	if len(b) == 0 {
		return ""
	}
	t := &tailBuffer{max: LogLimit}
	t.Write(b)
	return t.String()
}

// procPath is the file beside an attempt's report that names its running
// process group: "pgid session start-time\n".
func procPath(reportPath string) string {
	return strings.TrimSuffix(reportPath, ".jsonl") + ".proc"
}

// procStat is what /proc/<pid>/stat says of a process.
type procStat struct {
	state         string
	pgrp, session int
	startTime     uint64 // clock ticks after boot (field 22)
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// "pid (comm) state ppid pgrp session … starttime …"; comm may hold
	// spaces and parentheses: the fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	var st procStat
	st.state = f[0]
	st.pgrp, err = strconv.Atoi(f[2])
	if err == nil {
		st.session, err = strconv.Atoi(f[3])
	}
	if err == nil {
		st.startTime, err = strconv.ParseUint(f[19], 10, 64)
	}
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

func writeProcFile(path string, pgid int) error {
	return writeProcLine(path, pgid, "")
}

// writeOwnedProcFile is writeProcFile for a file that no expiry vouches
// for (a sensor's evaluator: its file is named for the sensor, not for an
// attempt whose lease expired): it adds this server's pid and start time,
// and killOrphansAt leaves the group alone while that server runs.
func writeOwnedProcFile(path string, pgid int) error {
	self, err := readProcStat(os.Getpid())
	if err != nil {
		return err
	}
	return writeProcLine(path, pgid, fmt.Sprintf(" %d %d", os.Getpid(), self.startTime))
}

func writeProcLine(path string, pgid int, owner string) error {
	st, err := readProcStat(pgid)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	err = os.WriteFile(tmp, fmt.Appendf(nil, "%d %d %d%s\n", pgid, st.session, st.startTime, owner), 0o644)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp) // a short write (full disk) or a failed rename leaves it
	}
	return err
}

// killOrphans kills what is left of the process group an attempt's command
// ran in (its proc file beside reportPath) and removes the file: after a
// crash, the server's death killed the command's main process, not the
// children it started. The group is killed only while it is provably the
// recorded one, never another that reuses the number: its leader still runs
// with the recorded start time, or the leader is gone and the group's members
// are in the recorded session and started after it (a group id cannot be
// handed out again while the group has members). It reports how many
// processes it killed.
func killOrphans(reportPath string) (int, error) {
	return killOrphansAt(procPath(reportPath))
}

// killOrphansAt is killOrphans of the proc file at path. A file that names
// its server (writeOwnedProcFile) is left as it is while that server runs:
// the group is its own, running.
func killOrphansAt(path string) (int, error) {
	_ = os.Remove(path + ".tmp") // a write the crash cut short
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var pgid, session, server int
	var start, serverStart uint64
	n, _ := fmt.Sscanf(string(b), "%d %d %d %d %d", &pgid, &session, &start, &server, &serverStart)
	if n == 5 {
		if st, err := readProcStat(server); err == nil && st.startTime == serverStart && st.state != "Z" {
			return 0, nil // its server runs: not an orphan
		}
	}
	defer os.Remove(path)
	if (n != 3 && n != 5) || pgid <= 1 {
		return 0, fmt.Errorf("%s: unreadable (%q)", path, b)
	}
	members := groupMembers(pgid)
	if st, err := readProcStat(pgid); err == nil {
		if st.startTime != start {
			return 0, nil // the leader is gone and another process has its number
		}
	} else {
		for _, st := range members {
			if st.session != session || st.startTime < start {
				return 0, nil
			}
		}
	}
	if len(members) == 0 {
		return 0, nil
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return 0, fmt.Errorf("kill process group %d: %w", pgid, err)
	}
	return len(members), nil
}

// killOrphans kills what is left of an expired attempt's command (see
// killOrphans) before recovery records it interrupted and plans a retry.
func (e *Engine) killOrphans(runID string, attempt int64) {
	n, err := killOrphans(e.reportPath(runID, attempt))
	if err != nil {
		e.Log.Warn("kill the processes of an expired attempt", "run", runID, "attempt", attempt, "err", err)
	} else if n > 0 {
		e.Log.Info("killed the processes of an expired attempt", "run", runID, "attempt", attempt, "processes", n)
	}
}

// groupMembers lists the live processes of process group pgid.
func groupMembers(pgid int) []procStat {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procStat
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil || st.pgrp != pgid || st.state == "Z" {
			continue
		}
		out = append(out, st)
	}
	return out
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	total int
	// file, when set, receives the output too; it is cut back to the tail
	// whenever it grows past 4 × max, so it stays bounded.
	file  *os.File
	fileN int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += len(p)
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	if t.file != nil {
		if t.fileN+len(p) > 4*t.max {
			if t.file.Truncate(0) == nil {
				_, _ = t.file.Seek(0, io.SeekStart)
				n, _ := t.file.Write(t.buf)
				t.fileN = n
			}
		} else {
			n, _ := t.file.Write(p)
			t.fileN += n
		}
	}
	return len(p), nil
}

// Total is how many bytes were written so far: it changes with the output.
func (t *tailBuffer) Total() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.total > len(t.buf) {
		return fmt.Sprintf("[… %d earlier bytes dropped]\n", t.total-len(t.buf)) + string(t.buf)
	}
	return string(t.buf)
}
