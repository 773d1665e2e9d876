package db

import (
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
