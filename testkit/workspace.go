package testkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Daily is the partitions of a daily asset from 2025-01-01 on, for Asset.
const Daily = `{daily: {start: "2025-01-01"}}`

// Assets is a test workspace's YAML: its assets section holds the given
// assets (Asset), in that order; more sections may follow it.
func Assets(assets ...string) string {
	return "assets:\n" + strings.Join(assets, "")
}

// Asset is one asset of a test workspace (see Assets): partitions is the
// value of its partitions field (Daily, `{static: [a, b]}`), and fields are
// more of its fields, one a line, as in the file ("code_version: v1",
// "retries: {max_attempts: 1}"). Without an executor among them it runs
// the demo executor, 1 ms a partition.
func Asset(name, partitions string, fields ...string) string {
	var b strings.Builder
	b.WriteString("  " + name + ":\n    partitions: " + partitions + "\n")
	executor := false
	for _, f := range fields {
		for _, l := range strings.Split(strings.TrimRight(f, "\n"), "\n") {
			b.WriteString("    " + l + "\n")
		}
		executor = executor || strings.HasPrefix(f, "executor:")
	}
	if !executor {
		b.WriteString("    executor: {demo: {duration: 1ms}}\n")
	}
	return b.String()
}

// Script writes the shell script name (body after a "#!/bin/sh" line) to
// a new temporary directory, executable, and returns its path: an
// evaluator or a command executor for a test workspace.
func Script(t testing.TB, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
