package cli

import (
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTermTextEscapesWhatATerminalObeys: C0 (tab and newline too), DEL, C1,
// bytes that are not UTF-8, U+2028/2029 and the direction overrides come out
// as Go escapes; other text, backslashes and non-ASCII letters included,
// comes out as it went in.
func TestTermTextEscapesWhatATerminalObeys(t *testing.T) {
	for in, want := range map[string]string{
		"plain title":                  "plain title",
		"déjà vu ✓ C:\\dir":            "déjà vu ✓ C:\\dir",
		"\x1b]0;pwned\x07":             `\x1b]0;pwned\a`,
		"a\x1b[2Jb":                    `a\x1b[2Jb`,
		"tab\there\nnew\rline\x00":     `tab\there\nnew\rline\x00`,
		"del\x7f":                      `del\x7f`,
		"c1 \u009b31m \u0085":          `c1 \u009b31m \u0085`,
		"raw \x9b byte":                `raw \x9b byte`,
		"sep \u2028 \u2029":            `sep \u2028 \u2029`,
		"bidi \u202eevil\u202c \u2066": `bidi \u202eevil\u202c \u2066`,
		"marks \u200e\u200f\u061c":     `marks \u200e\u200f\u061c`,
	} {
		if got := termText(in); got != want {
			t.Errorf("termText(%q) = %q, want %q", in, got, want)
		}
		if got := termText(termText(in)); got != want {
			t.Errorf("termText twice on %q = %q, want %q as once", in, got, want)
		}
	}
}

// TestSayKeepsTheFormatAndEscapesTheArguments: sayf and sayln keep what the
// format and fmt make of each argument (verbs, widths, tabs and newlines of
// the CLI's own), and escape what the arguments hold; errorText escapes each
// line of an error, not the line breaks between them.
func TestSayKeepsTheFormatAndEscapesTheArguments(t *testing.T) {
	var b bytes.Buffer
	sayf(&b, "%s\t%-6s|%d %v %q\n", "a\x1bb", "x\ty", 42, []string{"k\x07"}, "q\x1b")
	if want := "a\\x1bb\tx\\ty   |42 [k\\a] \"q\\x1b\"\n"; b.String() != want {
		t.Errorf("sayf wrote %q, want %q", b.String(), want)
	}
	b.Reset()
	sayln(&b, "backfill", "t\u202e", 3)
	if want := "backfill t\\u202e 3\n"; b.String() != want {
		t.Errorf("sayln wrote %q, want %q", b.String(), want)
	}
	if got, want := errorText(errors.New("2 problems:\nbad \x1b[2J\nworse\x07")), "2 problems:\nbad \\x1b[2J\nworse\\a"; got != want {
		t.Errorf("errorText = %q, want %q", got, want)
	}
}

// TestCLIPrintsOnlyThroughTermText holds the package to printing through
// sayf and sayln (term_text.go): a fmt.Fprint, Fprintf, Fprintln, Print,
// Printf or Println elsewhere may only print string literals and what
// termText or errorText made.
func TestCLIPrintsOnlyThroughTermText(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "term_text.go" {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "fmt" {
				return true
			}
			args := call.Args
			switch sel.Sel.Name {
			case "Fprint", "Fprintf", "Fprintln":
				args = args[1:]
			case "Print", "Printf", "Println":
			default:
				return true
			}
			for _, a := range args {
				if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					continue
				}
				if c, ok := a.(*ast.CallExpr); ok {
					if id, ok := c.Fun.(*ast.Ident); ok && (id.Name == "termText" || id.Name == "errorText") {
						continue
					}
				}
				t.Errorf("%s: fmt.%s prints %s as it is: print through sayf or sayln (term_text.go), which escape the terminal's control characters",
					fset.Position(call.Pos()), sel.Sel.Name, src[fset.Position(a.Pos()).Offset:fset.Position(a.End()).Offset])
			}
			return true
		})
	}
}
