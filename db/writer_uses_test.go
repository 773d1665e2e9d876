package db

import (
	"go/ast"
	"go/token"
	"slices"
	"testing"
)

// TestWriterUsesGoThroughWriter: in this package's code, the writer pool
// (Store.w) is taken through Store.writer, which counts uses on behalf of
// reads, except where the store opens, closes, hands its pools to tests and
// metrics, and sets the writer's checkpoint threshold. A new use of s.w
// elsewhere would escape the count TestReadsNeverUseTheWriter relies on.
func TestWriterUsesGoThroughWriter(t *testing.T) {
	allowed := []string{"writer", "OpenWith", "MigrationVersion", "Close", "RawWriter", "Pools", "StartCheckpointer"}
	found := 0
	eachGoSource(t, ".", topOnly, 0, func(_ string, fset *token.FileSet, f *ast.File) {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "w" {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); !ok || id.Name != "s" {
					return true
				}
				found++
				if !slices.Contains(allowed, fn.Name.Name) {
					t.Errorf("%s: %s uses s.w; take the writer with s.writer(ctx), so that uses on behalf of reads are counted", fset.Position(sel.Pos()), fn.Name.Name)
				}
				return true
			})
		}
	})
	if found == 0 {
		t.Fatal("no use of s.w found at all: the check looks at the wrong thing")
	}
}
