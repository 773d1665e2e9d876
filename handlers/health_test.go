package handlers_test

import (
	"context"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
	"github.com/tessera-dev/tessera/testkit/logbuf"
)

// leftovers lists the crash-recovery files (.out, .proc, .proc.tmp) left in
// dir; directories are not files the executor wrote.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".out") || strings.HasSuffix(p, ".proc") || strings.HasSuffix(p, ".proc.tmp")) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

// TestCrashRecoveryDegradedIsReported: when an attempt's process-group file
// cannot be written (here its path is taken by a directory, which stops
// root too), the attempt still runs, the server log warns, /readyz says
// crash recovery is degraded and why, and no .out/.proc/.proc.tmp file is
// left once the attempt ended. A later attempt whose files are written
// clears it.
func TestCrashRecoveryDegradedIsReported(t *testing.T) {
	t.Parallel()
	env := testkit.WithAssets(t,
		testkit.Asset("c.cmd", testkit.Daily, "retries: {max_attempts: 1}", testkit.Shell(`sleep 0.2`)),
	)
	ctx := context.Background()
	logs := &logbuf.Buffer{}
	reports := filepath.Join(t.TempDir(), "reports")
	eng := env.NewEngine(t, slog.New(slog.NewTextHandler(logs, nil)), jobs.Options{ReportDir: reports})
	readyz := func() handlers.Readiness {
		var rd handlers.Readiness
		if code, _ := getJSON(t, env.Anon(), env.URL+"/readyz", &rd); code != http.StatusOK {
			t.Fatalf("/readyz: %d %+v, want 200 (degraded crash recovery leaves the server ready)", code, rd)
		}
		if rd.CrashRecovery == nil {
			t.Fatalf("/readyz says nothing of crash recovery: %+v", rd)
		}
		return rd
	}
	if rd := readyz(); rd.CrashRecovery.Degraded {
		t.Fatalf("crash recovery degraded before any attempt: %+v", rd.CrashRecovery)
	}

	// The backfill exists before the engine runs, so that its first
	// attempt's process-group file can be made unwritable: a directory
	// (not empty) where the file goes.
	a := pgCreateBF(t, eng, "c.cmd", "2025-01-01", "2025-01-01", 1)
	proc := filepath.Join(reports, eng.RunID(a.ID, 0)+"-1.proc")
	if err := os.MkdirAll(proc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "occupied"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.RunEngine(t, eng)

	finished := func(id string) func() bool {
		return func() bool {
			b, err := env.Store.Backfill(ctx, id)
			return err == nil && db.BackfillTerminal(b.State)
		}
	}
	testkit.Eventually(t, 15*time.Second, "the backfill to finish", finished(a.ID))
	if b, _ := env.Store.Backfill(ctx, a.ID); b.PartitionsMaterialized != 1 {
		t.Errorf("the attempt did not run to its end without its process-group file: %+v", b)
	}
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "crash recovery degraded") || !strings.Contains(l, "-1.proc") {
		t.Errorf("the server log does not warn that crash recovery is degraded (with the error naming the file):\n%s", l)
	}
	rd := readyz()
	if cr := rd.CrashRecovery; !cr.Degraded || !strings.Contains(cr.Reason, "crash") || cr.Since == "" || cr.Failures != 1 {
		t.Errorf("/readyz crash_recovery = %+v, want degraded with the reason, since and one failure", cr)
	}
	if strings.Contains(rd.CrashRecovery.Reason, reports) {
		t.Errorf("/readyz leaks the server's paths: %q", rd.CrashRecovery.Reason)
	}
	if left := leftovers(t, reports); len(left) != 0 {
		t.Errorf("files left after the attempt: %v", left)
	}

	// A later attempt whose files are written: whole again, nothing left.
	b := pgCreateBF(t, eng, "c.cmd", "2025-01-02", "2025-01-02", 1)
	testkit.Eventually(t, 15*time.Second, "the second backfill to finish", finished(b.ID))
	if cr := readyz().CrashRecovery; cr.Degraded || cr.Failures != 1 {
		t.Errorf("/readyz crash_recovery after an attempt whose files were written = %+v, want not degraded (one failure so far)", cr)
	}
	if left := leftovers(t, reports); len(left) != 0 {
		t.Errorf("files left after the attempts: %v", left)
	}
}
