package db

import (
	"go/ast"
	"go/parser"
	"go/token"
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
		eachGoSource(t, filepath.Join("..", pkg), topOnly, parser.ImportsOnly, func(name string, _ *token.FileSet, f *ast.File) {
			for _, im := range f.Imports {
				path, _ := strconv.Unquote(im.Path.Value)
				if ours, ok := strings.CutPrefix(path, mod); ok && !slices.Contains(may, ours) {
					t.Errorf("%s/%s imports %s; %s may import only %v (README, Layout)", pkg, name, ours, pkg, may)
				}
			}
		})
	}
}

// TestRawHandlesStayInTests: the store's pools are unexported; their
// accessors for tests (RawWriter, RawReader) are not called by non-test
// code outside db and testkit, and Pools only by the metrics.
func TestRawHandlesStayInTests(t *testing.T) {
	allowed := map[string]bool{"web/metrics.go:Pools": true}
	// testkit is the tests' own kit: its raw reads and writes serve them.
	files := eachGoSource(t, "..", func(rel string) bool { return rel == "db" || rel == "testkit" }, 0, func(rel string, _ *token.FileSet, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr) // a call: ws.Pools, the workspace's pools, is a field
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				switch name := sel.Sel.Name; name {
				case "RawWriter", "RawReader", "Pools":
					if !allowed[rel+":"+name] {
						t.Errorf("%s calls Store.%s: ask the store's methods (raw pools are for tests)", rel, name)
					}
				}
			}
			return true
		})
	})
	if files < 50 { // it once skipped the whole tree and checked nothing
		t.Fatalf("read %d Go files outside db: not the repository?", files)
	}
}
