package catalog

import (
	"fmt"
	"strings"
	"testing"
)

// Every validation problem found after decoding carries the line and column
// of the value (or key) it is about, and Error() prints file:line:column.
func TestWorkspaceProblemPositions(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		line, col int
		field     string
		msg       string
	}{
		{"unknown field", asset("    partitions: {static: [a]}\n    partiton: {static: [a]}\n" + demoExec), 6, 5, "assets.a.b.partiton", `did you mean "partitions"`},
		{"start after end", asset("    partitions:\n      daily: {start: 2025-02-01, end: 2025-01-01}\n" + demoExec), 6, 22, "assets.a.b.partitions.daily.start", "is not before end"},
		{"bad timezone", asset("    partitions: {daily: {start: 2025-01-01, timezone: Europe/Berln}}\n" + demoExec), 5, 55, "assets.a.b.partitions.daily.timezone", "unknown timezone"},
		{"bad http timeout", asset("    partitions: {static: [a]}\n    executor: {http: {url: \"https://x.example\", timeout: 5 minutes}}\n"), 6, 58, "assets.a.b.executor.http.timeout", "is not a duration"},
		{"unknown upstream", asset("    partitions: {static: [a]}\n    deps:\n      - {asset: a.c}\n" + demoExec), 7, 17, "assets.a.b.deps[0]", "unknown asset"},
		{"cycle names the asset key", asset("    partitions: {static: [a]}\n    deps: [a.b]\n" + demoExec), 4, 3, "assets.a.b.deps", "dependency cycle"},
		{"bad pool", "pools:\n  w: {max_concurrent_runs: 0}\nassets:\n  a.b:\n    partitions: {static: [a]}\n" + demoExec, 2, 28, "pools.w.max_concurrent_runs", "at least 1"},
		{"duplicate static key", asset("    partitions:\n      static:\n        - eu\n        - eu\n" + demoExec), 8, 11, "assets.a.b.partitions.static", "listed twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := problems(t, tc.src)
			for _, p := range ps {
				if p.Field == tc.field && strings.Contains(p.Message, tc.msg) {
					if p.Line != tc.line || p.Column != tc.col {
						t.Errorf("at %d:%d, want %d:%d: %s", p.Line, p.Column, tc.line, tc.col, p)
					}
					return
				}
			}
			t.Errorf("no problem %q at %s; got:\n%s", tc.msg, tc.field, (&ValidationError{ps}).Error())
		})
	}
}

// A YAML syntax error names the line where the file stops being valid (not
// the line where the enclosing mapping started, as yaml.v3 says, nor no line
// at all for the first line), the column of a tab, and how to fix it.
func TestYAMLSyntaxProblems(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		line, col int
		hint      string
	}{
		{"over-indented key", "assets:\n  a:\n    partitions: {static: [x]}\n     executor: {demo: {}}\n", 4, 0, "indented differently"},
		{"under-indented list item", "assets:\n  a:\n    deps:\n    - x\n   - y\n", 5, 0, "indented differently"},
		{"under-indented key after a multi-line list", "assets:\n  a:\n    command: [python3,\n      job.py]\n    x: 1\n   y: 2\n", 6, 0, "indented differently"},
		{"tab indentation", "assets:\n  a:\n    partitions: {static: [x]}\n  \tb: 1\n", 4, 3, "must use spaces"},
		{"tab on the second line", "assets:\n\ta:\n", 2, 1, "must use spaces"},
		{"colon in a value on line 1", "description: a: b\n", 1, 0, "put the value in quotes"},
		{"colon in a value", "assets:\n  a:\n    description: note: daily\n", 3, 0, "put the value in quotes"},
		{"unclosed flow mapping", "assets:\n  a:\n    partitions: {static: [x]\n    executor: {demo: {}}\n", 3, 0, "not closed"},
		{"unclosed quote", "assets:\n  a:\n    description: \"unclosed\n    executor: {demo: {}}\n", 3, 0, "never closed"},
		{"key without colon", "assets:\n  a:\n    partitions: x\n  executor\n", 4, 0, "lacks its colon"},
		{"reserved character", "assets:\n  a:\n    description: @home\n", 3, 0, "quotes"},
		{"unknown alias", "assets: *nope\n", 1, 0, "&NAME"},
		{"not UTF-8", "assets:\n  a:\n    description: \"\xff\xfe\"\n", 3, 0, "save it as UTF-8"},
		{"control character", "assets:\n  a:\n    description: a\x07b\n", 3, 0, "control character"},
		{"broken second document", "assets:\n  a: 1\n---\nb: [\n", 4, 0, ""},
	}
	// In a large file, the line is found by bisection past the first lines
	// after the one yaml.v3 reports.
	var big strings.Builder
	big.WriteString("assets:\n")
	for i := range 2000 {
		fmt.Fprintf(&big, "  a%d:\n    partitions: {static: [x]}\n%s", i, demoExec)
	}
	tests = append(tests,
		struct {
			name      string
			src       string
			line, col int
			hint      string
		}{"list item after 2000 assets", big.String() + "  - y\n", 6002, 0, ""},
		struct {
			name      string
			src       string
			line, col int
			hint      string
		}{"tab after 2000 assets", big.String() + "  \tb: 1\n", 6002, 3, "must use spaces"},
	)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := problems(t, tc.src)
			if len(ps) != 1 {
				t.Fatalf("want one problem, got:\n%s", (&ValidationError{ps}).Error())
			}
			p := ps[0]
			if p.Line != tc.line || p.Column != tc.col || !strings.HasPrefix(p.Message, "invalid YAML: ") || !strings.Contains(p.Message, tc.hint) {
				t.Errorf("got %s; want line %d column %d with %q", p, tc.line, tc.col, tc.hint)
			}
		})
	}
}

// A second document (after ---) would be ignored by a plain yaml.Unmarshal,
// silently dropping its assets: it is refused. Empty documents around the
// workspace (a leading or trailing ---) are fine.
func TestSecondDocumentRefused(t *testing.T) {
	one := "assets:\n  a:\n    partitions: {static: [x]}\n" + demoExec
	two := "assets:\n  b:\n    partitions: {static: [x]}\n" + demoExec
	ps := problems(t, one+"---\n"+two)
	if len(ps) != 1 || ps[0].Line != 5 || !strings.Contains(ps[0].Message, "second YAML document") {
		t.Fatalf("got:\n%s", (&ValidationError{ps}).Error())
	}
	for _, src := range []string{"---\n" + one, one + "---\n", one + "...\n"} {
		if _, err := ParseWorkspace("w.yaml", []byte(src)); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
}

// An http executor's timeout of 0 is refused like every other timeout: it
// would otherwise silently mean the asset's timeout.
func TestHTTPTimeoutMustBePositive(t *testing.T) {
	wantOneProblem(t, asset("    partitions: {static: [a]}\n    executor: {http: {url: \"https://x.example\", timeout: 0s}}\n"),
		"assets.a.b.executor.http.timeout", "must be positive")
}

// A misspelled required field is one problem ("unknown field … did you
// mean"), not that plus "missing …".
func TestMisspelledRequiredFieldReportedOnce(t *testing.T) {
	for _, tc := range []struct{ src, field string }{
		{asset("    partiton: {static: [a]}\n" + demoExec), "assets.a.b.partiton"},
		{asset("    partitions: {static: [a]}\n    exector: {demo: {}}\n"), "assets.a.b.exector"},
		{"pools:\n  w: 1\nasets:\n  a.b:\n    partitions: {static: [a]}\n" + demoExec, "asets"},
		{"pools:\n  w: {max_concurent_runs: 2}\nassets:\n  a.b:\n    partitions: {static: [a]}\n" + demoExec, "pools.w.max_concurent_runs"},
	} {
		wantOneProblem(t, tc.src, tc.field, "did you mean")
	}
}

// YAML anchors and merge keys work as in any YAML tool: a mapping merged
// with <<: *anchor gets the anchor's entries it does not set itself.
func TestMergeKeys(t *testing.T) {
	src := `assets:
  a:
    partitions: &daily {daily: {start: 2025-01-01}}
    executor: &http {http: {url: "https://etl.example/run", timeout: 5m}}
    retries: &retries {max_attempts: 5, backoff: 1m}
  b:
    <<: {partitions: *daily, executor: *http, code_version: v1}
    code_version: v2
    retries:
      <<: *retries
      max_attempts: 2
`
	w, err := ParseWorkspace("w.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	b := w.Asset("b")
	if b.Scheme == nil || b.Scheme.Kind() != KindDaily || b.Executor.HTTP == nil || b.Executor.HTTP.URL != "https://etl.example/run" ||
		b.CodeVersion != "v2" || b.Retries.MaxAttempts != 2 || b.Retries.Backoff.Minutes() != 1 {
		t.Fatalf("b = %+v", b)
	}
	wantOneProblem(t, "assets:\n  a:\n    <<: [x]\n    partitions: {static: [a]}\n"+demoExec, "assets.a.<<", "merge key")
}

// Values that pass as text but cannot work at run time are refused when the
// file is read, not at the first run: an empty group, pool or program, env
// names a process environment cannot carry or that Tessera sets itself,
// header names and values an HTTP request cannot carry.
func TestExecutorAndAssetValuesThatCannotWork(t *testing.T) {
	tests := []struct {
		name, body, field, msg string
	}{
		{"empty group", "    group: ''\n    partitions: {static: [a]}\n" + demoExec, "assets.a.b.group", "group is empty"},
		{"empty pool", "    pool: ''\n    partitions: {static: [a]}\n" + demoExec, "assets.a.b.pool", "pool is empty"},
		{"empty program", "    partitions: {static: [a]}\n    executor: {command: ['', job.py]}\n", "assets.a.b.executor.command", "the program (the first item) is empty"},
		{"env name with space", "    partitions: {static: [a]}\n    executor: {command: [job], env: {'DBT TARGET': prod}}\n", "assets.a.b.executor.env.DBT TARGET", "may only use letters, digits and '_'"},
		{"env name with =", "    partitions: {static: [a]}\n    executor: {command: [job], env: {'A=B': x}}\n", "assets.a.b.executor.env.A=B", "may only use letters"},
		{"env name Tessera sets", "    partitions: {static: [a]}\n    executor: {command: [job], env: {TESSERA_ASSET: x}}\n", "assets.a.b.executor.env.TESSERA_ASSET", "set by Tessera for every run"},
		{"header name", "    partitions: {static: [a]}\n    executor: {http: {url: 'https://x.example', headers: {'X Api Key': s}}}\n", "assets.a.b.executor.http.headers.X Api Key", "not a valid HTTP header name"},
		{"header value lines", "    partitions: {static: [a]}\n    executor: {http: {url: 'https://x.example', headers: {X-Key: \"a\\nb\"}}}\n", "assets.a.b.executor.http.headers.X-Key", "one line"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantOneProblem(t, asset(tc.body), tc.field, tc.msg) })
	}
	// Names Tessera does not set, TESSERA_ ones included, are fine.
	if _, err := ParseWorkspace("w.yaml", []byte(asset("    partitions: {static: [a]}\n    executor: {command: [job], env: {DBT_TARGET: prod, _X1: y, TESSERA_URL: 'http://x'}}\n"))); err != nil {
		t.Fatal(err)
	}
}

// A value of the wrong type says what was found and how to write it, once.
func TestWrongTypesSayWhatWasFound(t *testing.T) {
	tests := []struct {
		name, src, field, msg string
	}{
		{"list for a duration", asset("    partitions: {static: [a]}\n    timeout: [1h]\n" + demoExec), "assets.a.b.timeout", "expected a single value, found a list; write it as timeout: VALUE"},
		{"mapping for text", asset("    description: {a: b}\n    partitions: {static: [a]}\n" + demoExec), "assets.a.b.description", "found a mapping"},
		{"word for a number", "pools:\n  w: {max_concurrent_runs: four}\nassets:\n  a.b:\n    partitions: {static: [a]}\n" + demoExec, "pools.w.max_concurrent_runs", `"four" is not a whole number; write digits only, e.g. max_concurrent_runs: 4`},
		{"scalar for a mapping", asset("    partitions: {static: [a]}\n    retries: 3\n" + demoExec), "assets.a.b.retries", `retries must be a mapping (key: value pairs), found "3"`},
		{"list for a pool", "pools:\n  w: [1, 2]\nassets:\n  a.b:\n    partitions: {static: [a]}\n    pool: w\n" + demoExec, "pools.w", "a pool is a number of concurrent runs (w: 4) or a mapping"},
		{"empty pool", "pools:\n  w:\nassets:\n  a.b:\n    partitions: {static: [a]}\n    pool: w\n" + demoExec, "pools.w", "found nothing"},
		{"pool with no pools", asset("    partitions: {static: [a]}\n    pool: etl\n" + demoExec), "assets.a.b.pool", "declare it under pools:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantOneProblem(t, tc.src, tc.field, tc.msg) })
	}
}

// Merges of merges are read once per mapping: 30 levels, each merging the
// level below twice, would be 2^30 expansions otherwise (a file anyone who
// may edit the workspace could use to hang the server's reload).
func TestNestedMergesStayLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString("assets:\n  a:\n    partitions: {static: [x]}\n    executor: {demo: {}}\n    retries: &r0 {max_attempts: 2}\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "  a%d:\n    partitions: {static: [x]}\n    executor: {demo: {}}\n    retries: &r%d {<<: [*r%d, *r%d]}\n", i, i, i-1, i-1)
	}
	w, err := ParseWorkspace("w.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Asset("a30").Retries.MaxAttempts; got != 2 {
		t.Fatalf("a30 max_attempts = %d", got)
	}
}
