package catalog

import (
	"errors"
	"testing"
)

// FuzzParseWorkspace: any bytes either parse or are refused with a
// *ValidationError whose problems all name the file and have a message
// (and a line when they have a column); nothing panics.
func FuzzParseWorkspace(f *testing.F) {
	f.Add(DefaultWorkspaceYAML)
	f.Add([]byte("assets:\n  a:\n    partitions: {static: [x]}\n     executor: {demo: {}}\n"))
	f.Add([]byte("assets:\n\ta:\n"))
	f.Add([]byte("a: &x {<<: *x}\n"))
	f.Add([]byte("assets:\n  a: &a {partitions: {static: [x]}}\n  b: {<<: [*a, *a], executor: {demo: {}}}\n---\nx: 1\n"))
	f.Add([]byte("description: a: b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := ParseWorkspace("f.yaml", data)
		if err == nil {
			if w == nil || len(w.Assets) == 0 {
				t.Fatalf("valid workspace without assets: %q", data)
			}
			return
		}
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Problems) == 0 {
			t.Fatalf("error %T %v", err, err)
		}
		for _, p := range ve.Problems {
			if p.File != "f.yaml" || p.Message == "" || p.Line < 0 || p.Column < 0 || (p.Column > 0 && p.Line == 0) {
				t.Fatalf("problem %+v for %q", p, data)
			}
		}
	})
}
