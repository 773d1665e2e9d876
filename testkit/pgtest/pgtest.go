package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver of the admin connection
)

// cluster is the package's running cluster.
type cluster struct {
	dir   string // temporary directory: data/, the socket, the log
	bin   string
	port  int
	opts  string // the server's options (pg_ctl -o)
	runAs string // "postgres" when the tests run as root
	admin *sql.DB
}

var (
	once     sync.Once
	running  *cluster
	startErr error
	dbSeq    atomic.Int64
)

// Main runs the package's tests (m.Run) and stops the cluster if one of
// them started it; a package's TestMain is
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
func Main(m *testing.M) int {
	code := m.Run()
	if running != nil {
		if err := running.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// URL creates a fresh database in the package's cluster (starting the
// cluster first if needed) and returns its connection URL; the database
// is dropped when the test ends (after the test's own cleanups, which
// registered later, run first). t fails if PostgreSQL cannot start.
func URL(t testing.TB) string {
	t.Helper()
	once.Do(func() { running, startErr = start() })
	if startErr != nil {
		t.Fatalf("pgtest: cannot start PostgreSQL (install Debian's postgresql package, or set TESSERA_PG_BIN to its bin directory): %v", startErr)
	}
	name := fmt.Sprintf("t%d_%s", dbSeq.Add(1), dbName(t.Name()))
	if _, err := running.admin.Exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := running.admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return running.url(name)
}

// AdminURL is the URL of the cluster's postgres database, for a test that
// needs the cluster itself (the cluster starts if needed).
func AdminURL(t testing.TB) string {
	t.Helper()
	URL(t) // starts the cluster
	return running.url("postgres")
}

var nonWord = regexp.MustCompile(`[^a-z0-9_]+`)

// dbName is a database name (an identifier without quotes) from a test's
// name: lower case, words only, short.
func dbName(test string) string {
	n := nonWord.ReplaceAllString(strings.ToLower(test), "_")
	if len(n) > 40 {
		n = n[:40]
	}
	return strings.Trim(n, "_")
}

func (c *cluster) url(dbname string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, dbname)
}

// binDir is the directory of initdb and pg_ctl.
func binDir() (string, error) {
	if b := os.Getenv("TESSERA_PG_BIN"); b != "" {
		return b, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return va - vb
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	return "", errors.New("no initdb in /usr/lib/postgresql/*/bin")
}

// start creates and starts a cluster; a port taken meanwhile by another
// package's cluster is tried again with another.
func start() (*cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "tessera-pg-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		c.runAs = "postgres"
		u, err := user.Lookup(c.runAs)
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if out, err := c.run("initdb", "-D", c.data(), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	var lastErr error
	for range 5 {
		c.port, err = freePort()
		if err != nil {
			break
		}
		c.opts = fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400", c.port, c.dir)
		out, err := c.pgCtl("start")
		if err == nil {
			lastErr = nil
			break
		}
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		lastErr = fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, log)
	}
	if err == nil && lastErr == nil {
		c.admin, err = sql.Open("pgx", c.url("postgres"))
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err = c.admin.PingContext(ctx)
			cancel()
		}
	}
	if err == nil {
		err = lastErr
	}
	if err != nil {
		_ = c.stop()
		return nil, err
	}
	return c, nil
}

func (c *cluster) data() string { return filepath.Join(c.dir, "data") }

// pgCtl runs pg_ctl's action (start, stop, restart) on the cluster and
// waits for it to complete; start and restart give the server its options.
func (c *cluster) pgCtl(action string) ([]byte, error) {
	args := []string{"-D", c.data(), "-w", "-t", "60", "-l", filepath.Join(c.dir, "log")}
	if action != "stop" {
		args = append(args, "-o", c.opts)
	} else {
		args = append(args, "-m", "fast")
	}
	return c.run("pg_ctl", append(args, action)...)
}

// run runs one of the cluster's programs, as the postgres user when the
// tests run as root.
func (c *cluster) run(prog string, args ...string) ([]byte, error) {
	path := filepath.Join(c.bin, prog)
	var cmd *exec.Cmd
	if c.runAs != "" {
		line := shellQuote(path)
		for _, a := range args {
			line += " " + shellQuote(a)
		}
		cmd = exec.Command("su", c.runAs, "-c", line)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = c.dir
	return cmd.CombinedOutput()
}

// stop stops the cluster (immediate: its data is thrown away) and removes
// its directory.
func (c *cluster) stop() error {
	if c.admin != nil {
		c.admin.Close()
	}
	var err error
	if _, statErr := os.Stat(filepath.Join(c.data(), "postmaster.pid")); statErr == nil {
		if out, e := c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop"); e != nil {
			err = fmt.Errorf("pg_ctl stop: %w\n%s", e, out)
		}
	}
	return errors.Join(err, os.RemoveAll(c.dir))
}

// freePort is a TCP port of 127.0.0.1 free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Cluster is a PostgreSQL cluster of one test's own (NewCluster), for the
// tests that stop or restart the server: the package's cluster is shared
// by its tests, which must not see it go away.
type Cluster struct{ c *cluster }

// NewCluster starts a cluster for t alone (on a port of its own), stopped
// and removed when t ends; t fails if PostgreSQL cannot start.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	c, err := start()
	if err != nil {
		t.Fatalf("pgtest: cannot start PostgreSQL (install Debian's postgresql package, or set TESSERA_PG_BIN to its bin directory): %v", err)
	}
	t.Cleanup(func() {
		if err := c.stop(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return &Cluster{c}
}

// URL creates a database in the cluster and returns its URL.
func (k *Cluster) URL(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%s", dbSeq.Add(1), dbName(t.Name()))
	if _, err := k.c.admin.Exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	return k.c.url(name)
}

// Stop stops the server (fast: its sessions are ended); Start starts it
// again on the same port.
func (k *Cluster) Stop(t testing.TB) {
	t.Helper()
	if out, err := k.c.pgCtl("stop"); err != nil {
		t.Fatalf("pgtest: pg_ctl stop: %v\n%s", err, out)
	}
}

// Start starts the server Stop stopped, on the same port.
func (k *Cluster) Start(t testing.TB) {
	t.Helper()
	if out, err := k.c.pgCtl("start"); err != nil {
		t.Fatalf("pgtest: pg_ctl start: %v\n%s", err, out)
	}
}

// Restart restarts the server (pg_ctl restart): every session ends, and
// the clients reconnect to the same address.
func (k *Cluster) Restart(t testing.TB) {
	t.Helper()
	if out, err := k.c.pgCtl("restart"); err != nil {
		t.Fatalf("pgtest: pg_ctl restart: %v\n%s", err, out)
	}
}
