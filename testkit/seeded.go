package testkit

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/demo"
	"github.com/tessera-dev/tessera/handlers"
)

// seededMaxAge is how long a seeded database serves as the copy of later
// tests (Options.Seed): the demo history is relative to when it was
// seeded, and within the same hour of the clock and this age only the
// build times of the static and dynamic partitions (minutes before the
// seed) look older by as much; the windows, gaps, lags and watermarks of
// the time-partitioned assets are the same as a seed of the test's own.
const seededMaxAge = 10 * time.Minute

// seeded is the SQLite file (of the store's default page size) of the
// embedded default workspace with its demo history, seeded once and copied for each test of the process that
// asks for it: seeding took 3 s of CPU per test (some 25 tests of web and
// handlers), a copy takes milliseconds. Each test still has a database of
// its own. Main removes the file.
var seeded struct {
	mu   sync.Mutex
	dir  string
	file string
	at   time.Time
}

// copySeeded writes a copy of the seeded default workspace's database to
// loc (seeding it first when there is none, or it is too old).
func copySeeded(loc string) error {
	seeded.mu.Lock()
	defer seeded.mu.Unlock()
	now := time.Now()
	if seeded.file == "" || now.Sub(seeded.at) > seededMaxAge || !now.Truncate(time.Hour).Equal(seeded.at.Truncate(time.Hour)) {
		if err := seedTemplate(now); err != nil {
			return err
		}
	}
	return copyFile(seeded.file, loc)
}

// seedTemplate seeds a new template database at now, in place of the last.
func seedTemplate(now time.Time) error {
	removeSeeded()
	dir, err := os.MkdirTemp("", "tessera-seeded-")
	if err != nil {
		return err
	}
	file := filepath.Join(dir, "seeded.db")
	store, err := db.Open(file)
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	ctx := context.Background()
	loaded, err := handlers.LoadWorkspace(ctx, store, catalog.DefaultWorkspace(), "embedded default workspace", "test", now)
	if err == nil {
		_, err = demo.Seed(ctx, store, loaded.Workspace, loaded.IDs, now)
	}
	// Closing the last connection checkpoints the WAL into the file.
	if cerr := store.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if _, serr := os.Stat(file + "-wal"); serr == nil {
			err = fmt.Errorf("the seeded database %s kept its WAL after closing", file)
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("seed the demo history: %w", err)
	}
	seeded.dir, seeded.file, seeded.at = dir, file, now
	return nil
}

// removeSeeded removes the template database, if any.
func removeSeeded() {
	if seeded.dir != "" {
		os.RemoveAll(seeded.dir)
	}
	seeded.dir, seeded.file, seeded.at = "", "", time.Time{}
}

// RemoveSeeded removes the seeded template database of the process (Main
// calls it when the tests end).
func RemoveSeeded() {
	seeded.mu.Lock()
	defer seeded.mu.Unlock()
	removeSeeded()
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
