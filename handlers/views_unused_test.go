package handlers_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestBackfillViewsHaveNoDeadCode: every exported top-level name of the
// backfill views (views/backfill_model.go, views/backfills.templ) is used
// somewhere else: in package views other than by its own declaration, or
// as views.Name in another package. The asset grid's selection bar moved
// to views/asset.templ (GridSelectionBar) and left views.SelectionBar,
// SelectionFor and Selection behind, unused.
func TestBackfillViewsHaveNoDeadCode(t *testing.T) {
	root := ".."
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(path)] = f
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]token.Pos{} // name → position of its declaring identifier
	for _, path := range []string{"../views/backfill_model.go", "../views/backfills_templ.go"} {
		f := files[path]
		if f == nil {
			t.Fatalf("%s not found", path)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					declared[d.Name.Name] = d.Name.Pos()
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							declared[s.Name.Name] = s.Name.Pos()
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								declared[n.Name] = n.Pos()
							}
						}
					}
				}
			}
		}
	}
	used := map[string]bool{}
	for path, f := range files {
		inViews := f.Name.Name == "views" && strings.HasPrefix(path, "../views/")
		skip := map[*ast.Ident]bool{} // field names, selectors and keys: not the package-level name
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "views" && !inViews {
					used[n.Sel.Name] = true
				}
				skip[n.Sel] = true
			case *ast.Field:
				for _, id := range n.Names {
					skip[id] = true
				}
			case *ast.KeyValueExpr:
				if id, ok := n.Key.(*ast.Ident); ok {
					skip[id] = true
				}
			case *ast.Ident:
				if inViews && !skip[n] && declared[n.Name] != token.NoPos && declared[n.Name] != n.Pos() {
					used[n.Name] = true
				}
			}
			return true
		})
	}
	var unused []string
	for name := range declared {
		if !used[name] {
			unused = append(unused, name)
		}
	}
	slices.Sort(unused)
	if len(unused) > 0 {
		t.Errorf("declared in the backfill views and used nowhere: %s", strings.Join(unused, ", "))
	}
}
