package jobs

import (
	"context"
	"errors"
	"fmt"
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
// the work in TESSERA_* environment variables. The command may write one
// JSON line per partition to $TESSERA_REPORT; exit 0 without a report means
// every partition materialized. On cancel or timeout the whole process group
// is killed.
type CommandExecutor struct{}

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
	env := os.Environ()
	for k, v := range ex.Env {
		env = append(env, k+"="+v)
	}
	env = append(env,
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
	cmd.Env = env
	out := &tailBuffer{max: LogLimit}
	cmd.Stdout, cmd.Stderr = out, out
	defer trackLiveLog(w.RunID, out)() // the run page tails it (livelog.go)
	// Own process group (killed whole on cancel); killed if the server dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return Result{Err: fmt.Errorf("start %s: %w", ex.Command[0], err)}
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-waited:
		case <-time.After(2 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-waited
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // stragglers of the group
		res := Result{Err: context.Cause(ctx), Log: out.String(), Parts: readReport(w.ReportPath)}
		return res
	}
	res := Result{Log: out.String(), Parts: readReport(w.ReportPath)}
	if err != nil {
		res.Err = fmt.Errorf("command failed: %v", err)
	}
	return res
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	total int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += len(p)
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.total > len(t.buf) {
		return fmt.Sprintf("[… %d earlier bytes dropped]\n", t.total-len(t.buf)) + string(t.buf)
	}
	return string(t.buf)
}
