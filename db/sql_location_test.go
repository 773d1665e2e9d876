package db

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// sqlShapes recognise the start of an SQL statement in a string literal
// (after leading blanks), case-insensitively: a statement keyword followed
// by what SQL puts after it, so that words like "selector", "Create a
// backfill" or "with shell: true" are not taken for SQL.
var sqlShapes = []*regexp.Regexp{
	// SELECT and a select list: *, t.*, (, ?, a literal, a function call,
	// a list (comma), an alias (AS) or one column read FROM a table.
	regexp.MustCompile(`(?is)^select\s+(distinct\s+|all\s+)?(\*|\(|\?|'|%|\d|[\w.]*\*|[\w.]+\s*(,|\(|\bas\b)|[\w.]+\s+from\s+[\w.]+\s*($|;|\)|\bwhere\b|\bjoin\b|\bleft\b|\binner\b|\border\b|\bgroup\b|\blimit\b|\bunion\b|\bon\b))`),
	regexp.MustCompile(`(?is)^insert\s+(or\s+\w+\s+)?into\b`),
	regexp.MustCompile(`(?is)^update\s+(or\s+\w+\s+)?[\w."]+\s+set\b`),
	regexp.MustCompile(`(?is)^delete\s+from\b`),
	regexp.MustCompile(`(?is)^with\s+(recursive\s+)?[\w"]+\s*(\([^)]*\)\s*)?as\s*(not\s+)?(materialized\s*)?\(`),
	regexp.MustCompile(`(?is)^create\s+(unique\s+|temp\s+|temporary\s+|virtual\s+)*(table|index|view|trigger)\b`),
	regexp.MustCompile(`(?is)^alter\s+table\b`),
	regexp.MustCompile(`(?is)^drop\s+(table|index|view|trigger)\b`),
	regexp.MustCompile(`(?is)^pragma\s+[\w.]+\s*(=|\(|;|$)`),
	regexp.MustCompile(`(?is)^analyze\s*([\w.]+\s*)?;?\s*$`),
}

func looksLikeSQL(s string) bool {
	s = strings.TrimSpace(s)
	for _, re := range sqlShapes {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// sqlLiterals returns file:line of each string literal of the non-test Go
// files under root (skipping the directories skip says to) that starts an
// SQL statement, and how many files it read.
func sqlLiterals(t *testing.T, root string, skip func(rel string) bool) (hits []string, files int) {
	t.Helper()
	files = eachGoSource(t, root, skip, parser.SkipObjectResolution, func(rel string, fset *token.FileSet, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(lit.Value)
			if err == nil && looksLikeSQL(v) {
				p := fset.Position(lit.Pos())
				hits = append(hits, rel+":"+strconv.Itoa(p.Line)+": "+firstLine(v))
			}
			return true
		})
	})
	return hits, files
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return s
}

// moduleRoot is the directory of go.mod above the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

// TestSQLLivesInDB: the house rule "db/ holds ALL SQL" (issue 20 item 1).
// No non-test Go file outside db/ has a string literal that starts an SQL
// statement; jobs/, handlers/ and the rest ask the store in domain terms.
// Test files may keep SQL for their assertions.
func TestSQLLivesInDB(t *testing.T) {
	root := moduleRoot(t)
	hits, files := sqlLiterals(t, root, func(rel string) bool { return rel == "db" })
	if files < 50 {
		t.Fatalf("read %d Go files under %s: not the repository?", files, root)
	}
	for _, h := range hits {
		t.Errorf("%s\n\tSQL outside db/: move it into a named db.Store method (with a doc comment saying what it answers) and call that", h)
	}
}

// TestSQLDetector keeps the detector honest: it finds the statements db/
// holds, and it recognises SQL whatever its case while leaving the words of
// the user interface alone.
func TestSQLDetector(t *testing.T) {
	root := moduleRoot(t)
	inDB, _ := sqlLiterals(t, filepath.Join(root, "db"), func(string) bool { return false })
	if len(inDB) < 100 {
		t.Errorf("the detector found %d SQL literals in db/, which holds hundreds: it misses statements", len(inDB))
	}
	for _, s := range []string{
		`SELECT * FROM runs WHERE id=?`,
		"\n\t\tselect a.* from attempts a left join workers w on w.owner = a.owner",
		`SELECT value FROM settings WHERE name='run_id_secret'`,
		`SELECT partition_key FROM partition_status
		WHERE asset_id=?`,
		`SELECT 1`,
		`SELECT COUNT(*) FROM partition_status`,
		`select status, count(*) from partition_status group by status`,
		`SELECT (block - ?) / ?, status, SUM(n) FROM partition_rollup`,
		`SELECT name FROM sqlite_master`,
		`INSERT INTO workers (owner) VALUES (?)`,
		`insert or replace into settings (name, value) values (?, ?)`,
		`UPDATE runs SET state='queued' WHERE id=?`,
		`DELETE FROM workers WHERE owner=?`,
		`WITH x AS (SELECT 1) SELECT * FROM x`,
		`with recursive r(n) as (select 1) select n from r`,
		`CREATE INDEX runs_active ON runs (state)`,
		`create unique index a on b (c)`,
		`ALTER TABLE runs ADD COLUMN x`,
		`DROP INDEX partition_status_idx`,
		`PRAGMA cache_size = -131072`,
		`pragma wal_checkpoint(PASSIVE)`,
		`PRAGMA optimize`,
		`ANALYZE`,
		`analyze partition_status;`,
	} {
		if !looksLikeSQL(s) {
			t.Errorf("not recognised as SQL: %q", s)
		}
	}
	for _, s := range []string{
		"selector", "selector.keys", "selection", "update", "created_at", "delete", "drop", "with",
		"Create a backfill", "create ASSET...", "Create user", "Created: %s in %s",
		"with shell: true, command is a single script string, e.g. command: \"make load\"",
		"Select on the grid (click a first tile, shift-click a last one)",
		"Select partitions from the grid", "Update the page", "Delete the token", "Drop a file here",
		"Analyze the backfill's failures", "pragmatic", "withdraw",
	} {
		if looksLikeSQL(s) {
			t.Errorf("taken for SQL: %q", s)
		}
	}
}
