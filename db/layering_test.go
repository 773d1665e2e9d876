package db

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestPackagesImportWhatTheMapSays: the rooms of README's map keep their
// doors: the pure packages import nothing of ours, jobs never knows HTTP
// (handlers, web, views), db knows only the catalog. Test files may import
// more (testkit).
func TestPackagesImportWhatTheMapSays(t *testing.T) {
	const mod = "github.com/tessera-dev/tessera/"
	allowed := map[string][]string{
		"catalog":  {},
		"auth":     {},
		"views":    {},
		"static":   {},
		"db":       {"catalog"},
		"jobs":     {"catalog", "db"},
		"demo":     {"catalog", "db"},
		"bench":    {"auth", "catalog", "db", "handlers", "jobs", "web"},
		"handlers": {"auth", "catalog", "db", "jobs", "views"},
		// the tests inside jobs wait with it, so it stays a leaf
		"testkit/poll": {},
		// likewise: the tests inside db, jobs and demo open their stores with it
		"testkit/teststore": {"catalog", "db", "testkit/pgtest"},
		// and the PostgreSQL clusters of their stores (the tests inside db too)
		"testkit/pgtest": {},
		// the deployment files; its test alone imports db
		"deploy": {},
	}
	for pkg, may := range allowed {
		dir := filepath.Join("..", pkg)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range f.Imports {
				path, _ := strconv.Unquote(im.Path.Value)
				if ours, ok := strings.CutPrefix(path, mod); ok && !slices.Contains(may, ours) {
					t.Errorf("%s/%s imports %s; %s may import only %v (README, Layout)", pkg, name, ours, pkg, may)
				}
			}
		}
	}
}

// TestRawHandlesStayInTests: the store's pools are unexported; their
// accessors for tests (RawWriter, RawReader) are not called by non-test
// code outside db, and Pools only by the metrics.
func TestRawHandlesStayInTests(t *testing.T) {
	allowed := map[string]bool{"web/metrics.go:Pools": true}
	root := ".."
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "db" || strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				switch name := sel.Sel.Name; name {
				case "RawWriter", "RawReader", "Pools":
					if !allowed[rel+":"+name] {
						t.Errorf("%s calls Store.%s: ask the store's methods (raw pools are for tests)", rel, name)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
