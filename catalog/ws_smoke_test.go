package catalog

import "testing"

func TestSmokeDefault(t *testing.T) {
	w, err := ParseWorkspace("x", DefaultWorkspaceYAML)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range w.Assets {
		t.Log(a.Key, a.Scheme.Describe(), a.Deps, a.Executor.Kind)
	}
}
