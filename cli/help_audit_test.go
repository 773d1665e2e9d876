package cli_test

import (
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/cli"
	"github.com/tessera-dev/tessera/jobs"
	"github.com/tessera-dev/tessera/testkit"
)

// shellWords splits an example command line as a POSIX shell would for the
// quoting the help texts use ('...' and "..." without escapes).
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var out []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

var placeholder = regexp.MustCompile(`^[A-Z][A-Z_]*(\.\.\.|…)?$|^[A-Z]+,[A-Z]+`)

// helpCommands are the command lines the help texts show: examples (lines
// that start with "tessera ") and references in quotes ("tessera token
// create"), with the command they appear in.
func helpCommands(root *cobra.Command) (examples, refs [][2]string) {
	quoted := regexp.MustCompile(`"(tessera [^"]+)"`)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, text := range []string{c.Long, c.Example} {
			for _, l := range strings.Split(text, "\n") {
				if t := strings.TrimSpace(l); strings.HasPrefix(t, "tessera ") && strings.HasPrefix(l, " ") {
					examples = append(examples, [2]string{c.CommandPath(), t})
				}
				for _, m := range quoted.FindAllStringSubmatch(l, -1) {
					refs = append(refs, [2]string{c.CommandPath(), m[1]})
				}
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	return examples, refs
}

// resolve finds the command and checks every flag of words (after
// "tessera") exists on it; it returns the command and what is wrong.
func resolve(root *cobra.Command, words []string) (*cobra.Command, string) {
	c, rest, err := root.Find(words[1:])
	if err != nil || c == root {
		return nil, "no such command"
	}
	for _, w := range rest {
		if !strings.HasPrefix(w, "--") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(w, "--"), "=")
		if c.Flags().Lookup(name) == nil && c.InheritedFlags().Lookup(name) == nil {
			return c, "no flag --" + name
		}
	}
	return c, ""
}

// TestHelpExamplesWork runs every example command line of every --help text
// against a real server serving the embedded demo workspace (the names the
// examples use), as a new user pasting them would, and checks that every
// command a help text names ("tessera token create", "tessera report ASSET
// --watermark KEY") exists with the flags it is shown with. Before, gaps
// --help sent users to the HTTP API for the watermark, and preview and
// create had no example nor a word on how to choose partitions.
func TestHelpExamplesWork(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	root := cli.NewRoot(io.Discard, io.Discard)
	root.InitDefaultHelpCmd()
	examples, refs := helpCommands(root)
	for _, r := range refs {
		if _, bad := resolve(root, shellWords(t, r[1])); bad != "" {
			t.Errorf("%s --help names %q: %s", r[0], r[1], bad)
		}
	}
	// The commands whose help must show how they are used.
	for _, want := range []string{"tessera backfill preview", "tessera backfill create", "tessera report"} {
		n := 0
		for _, e := range examples {
			if e[0] == want {
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s --help has no example", want)
		}
	}
	for _, want := range []string{`"tessera report ASSET --watermark KEY"`} {
		c, _, _ := root.Find([]string{"gaps"})
		if !strings.Contains(c.Long, want) {
			t.Errorf("gaps --help does not say how to record a watermark with the CLI: lacks %s", want)
		}
	}

	env := testkit.New(t, testkit.Options{})
	env.StartEngine(t, jobs.Options{Executor: jobs.NoopExecutor{}})
	tok := env.AdminToken()
	ran := 0
	for _, e := range examples {
		words := shellWords(t, e[1])
		c, bad := resolve(root, words)
		if bad != "" {
			t.Errorf("%s --help example %q: %s", e[0], e[1], bad)
			continue
		}
		hasPlaceholder := false
		for _, w := range words[1:] {
			hasPlaceholder = hasPlaceholder || placeholder.MatchString(w)
		}
		if hasPlaceholder || c.Flags().Lookup("server") == nil && c.InheritedFlags().Lookup("server") == nil {
			continue
		}
		code, out, errOut := run(t, append(words[1:], "--server", env.URL, "--token", tok)...)
		if code != 0 {
			t.Errorf("%s --help example %q: exit %d\nstdout: %s\nstderr: %s", e[0], e[1], code, out, errOut)
		}
		ran++
	}
	if ran < 7 {
		t.Errorf("ran %d examples, want the 7 of report, backfill preview and create at least", ran)
	}
}

// TestHelpFlagPlaceholdersAndWording: flags that take a key, a file or JSON
// show it as the README writes them (--partition KEY, not "--partition key";
// --start KEY, not "--start string"), and --json says the same everywhere.
func TestHelpFlagPlaceholdersAndWording(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"backfill", "create", "--help"}, []string{"--partition KEY ", "--partitions KEY,KEY... ", "--start KEY ", "--end KEY ", "--partitions-file FILE ",
			"Choose the partitions with one of:", "--missing --failed: missing or failed"}},
		{[]string{"backfill", "preview", "--help"}, []string{"--partition KEY ", "--start KEY ", "writes nothing"}},
		{[]string{"gaps", "--help"}, []string{"--from KEY ", `"tessera report ASSET --watermark KEY"`}},
		{[]string{"report", "--help"}, []string{"--watermark KEY "}},
		{[]string{"backfill", "run", "--help"}, []string{"--log-lines int", "of the latest attempt or of --attempt N"}},
		{[]string{"backfill", "chunks", "--help"}, []string{"--limit int", "--all ", "comma-separated"}},
		{[]string{"backfill", "list", "--help"}, []string{"most backfills to show", "show every backfill"}},
		{[]string{"token", "list", "--help"}, []string{"--json          print exact JSON instead of a table"}},
		{[]string{"user", "list", "--help"}, []string{"--json   print exact JSON instead of a table"}},
		// Commands that answer with a sentence say so of --json.
		{[]string{"report", "--help"}, []string{"print the server's answer as exact JSON instead of a sentence", "the same report sent again with it records nothing twice"}},
		{[]string{"backfill", "preview", "--help"}, []string{"only stale partitions: materialized, but tainted, built by an older code version"}},
		{[]string{"taint", "--help"}, []string{"print the server's answer as exact JSON instead of a sentence"}},
		{[]string{"login", "--help"}, []string{"print the server's answer as exact JSON instead of a sentence"}},
		{[]string{"workspace", "reload", "--help"}, []string{"print the server's answer as exact JSON instead of a sentence"}},
		{[]string{"asset", "list", "--help"}, []string{"print exact JSON instead of a table"}},
	}
	for _, tc := range cases {
		code, out, errOut := run(t, tc.args...)
		if code != 0 {
			t.Errorf("%v: exit %d %q", tc.args, code, errOut)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v lacks %q:\n%s", tc.args, w, out)
			}
		}
		for _, not := range []string{"--partition key ", "--partitions keys ", "--start string", "(latest attempt's log"} {
			if strings.Contains(out, not) {
				t.Errorf("%v still shows %q", tc.args, not)
			}
		}
	}
}

// TestListsSayWhatTheyLeftOut: backfill list, backfill chunks and asset
// partitions show a first page; they now say so when more are left out
// (as backfill events did) and how to see more. Before, list stopped at 50
// backfills, chunks at 1,000 chunk runs (with no --limit nor --all) and
// asset partitions at 100 partitions without a word. backfill chunks takes
// --limit N and --all as list and events do; every --json has next_cursor.
func TestListsSayWhatTheyLeftOut(t *testing.T) {
	t.Parallel() // no config: TestMain took it away from the whole process
	s := startServer(t)
	code, out, errOut := s.cli(t, "backfill", "create", "t.daily", "--start", "2025-02-01", "--end", "2025-02-05", "--wait")
	if code != 0 {
		t.Fatalf("create: exit %d %q %q", code, out, errOut)
	}
	id := strings.Fields(out[strings.LastIndex(out, "backfill "):])[1]
	for _, k := range []string{"only", "only"} {
		if code, out, errOut := s.cli(t, "backfill", "create", "t.one", "--partition", k, "--wait"); code != 0 {
			t.Fatalf("create t.one: exit %d %q %q", code, out, errOut)
		}
	}

	rows := func(out string, prefix *regexp.Regexp) int { return len(prefix.FindAllString(out, -1)) }
	chunkRow := regexp.MustCompile(`(?m)^\d+\s+succeeded\s`)
	code, out, _ = s.cli(t, "backfill", "chunks", id, "--limit", "2")
	if code != 0 || rows(out, chunkRow) != 2 || !strings.Contains(out, "(the first 2 chunks; later ones left out: --limit N shows more, --all shows every chunk)") {
		t.Errorf("chunks --limit 2: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"--all"}, nil} {
		code, out, _ = s.cli(t, append([]string{"backfill", "chunks", id}, args...)...)
		if code != 0 || rows(out, chunkRow) != 5 || strings.Contains(out, "left out") {
			t.Errorf("chunks %v: exit %d\n%s", args, code, out)
		}
	}
	code, out, _ = s.cli(t, "backfill", "chunks", id, "--limit", "2", "--json")
	var cj struct {
		Chunks     []map[string]any `json:"chunks"`
		NextCursor string           `json:"next_cursor"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &cj) != nil || len(cj.Chunks) != 2 || cj.NextCursor == "" {
		t.Errorf("chunks --limit 2 --json: exit %d %s", code, out)
	}
	if code, _, errOut = s.cli(t, "backfill", "chunks", id, "--limit", "2", "--all"); code != cli.ExitUsage || !strings.Contains(errOut, "--limit and --all both say how many chunks to show; use one") {
		t.Errorf("chunks --limit --all: exit %d %q", code, errOut)
	}

	bfRow := regexp.MustCompile(`(?m)^bf_\S+\s+SUCCEEDED\s`)
	code, out, _ = s.cli(t, "backfill", "list", "--limit", "2")
	if code != 0 || rows(out, bfRow) != 2 || !strings.Contains(out, "(the newest 2 backfills; older ones left out: --limit N shows more, --all shows every backfill)") {
		t.Errorf("list --limit 2: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"--all"}, nil} {
		code, out, _ = s.cli(t, append([]string{"backfill", "list"}, args...)...)
		if code != 0 || rows(out, bfRow) != 3 || strings.Contains(out, "left out") {
			t.Errorf("list %v: exit %d\n%s", args, code, out)
		}
	}
	code, out, _ = s.cli(t, "backfill", "list", "--limit", "2", "--json")
	var lj struct {
		Backfills  []map[string]any `json:"backfills"`
		NextCursor string           `json:"next_cursor"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &lj) != nil || len(lj.Backfills) != 2 || lj.NextCursor == "" {
		t.Errorf("list --limit 2 --json: exit %d %s", code, out)
	}
	if code, _, errOut = s.cli(t, "backfill", "list", "--limit", "2", "--all"); code != cli.ExitUsage || !strings.Contains(errOut, "--limit and --all both say how many backfills to show; use one") {
		t.Errorf("list --limit --all: exit %d %q", code, errOut)
	}

	partRow := regexp.MustCompile(`(?m)^2025-\d\d-\d\d\s+fresh\s`)
	code, out, _ = s.cli(t, "asset", "partitions", "t.daily", "--status", "materialized", "--limit", "3")
	if code != 0 || rows(out, partRow) != 3 || !strings.Contains(out, "(the first 3 partitions; later ones left out: --limit N shows more)") {
		t.Errorf("asset partitions --limit 3: exit %d\n%s", code, out)
	}
	code, out, _ = s.cli(t, "asset", "partitions", "t.daily", "--status", "materialized")
	if code != 0 || rows(out, partRow) != 5 || strings.Contains(out, "left out") {
		t.Errorf("asset partitions of all 5: exit %d\n%s", code, out)
	}
}
