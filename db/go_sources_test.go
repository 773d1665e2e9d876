package db

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// eachGoSource calls f with each non-test Go file under root, parsed with
// mode, by its slash path relative to root (fset places its nodes), and
// answers how many it read. It walks into no hidden, vendor, testdata or
// node_modules directory, nor into one skip names (by its path relative to
// root).
func eachGoSource(t *testing.T, root string, skip func(rel string) bool, mode parser.Mode, f func(rel string, fset *token.FileSet, file *ast.File)) (files int) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || name == "vendor" || name == "testdata" || name == "node_modules" || skip(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, mode)
		if err != nil {
			return err
		}
		files++
		f(rel, fset, file)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// topOnly is the skip of eachGoSource that reads root's own files only
// (one package).
func topOnly(string) bool { return true }
