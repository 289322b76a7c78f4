package stages_test

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/stages"
)

// TestKindsMeetOnlyThroughContracts enforces, on the Go source of every
// kind, that kinds learn from each other only through the pipeline's
// typed contracts (pipeline/contracts.go):
//
//   - only a kind's config.go imports cuelang.org/go (decoding its own
//     configuration): a kind that reads another kind's CUE by path breaks
//     silently when that kind renames a field;
//   - no kind compares a stage's kind with a kind's name (st.Kind ==
//     "launch", or a literal "health" in a comparison or a switch case):
//     what a kind needs from another is an interface the other implements.
//
// Test files are left out: a test may read a schema as CUE (the engine
// drift test does) or name the kinds it builds.
func TestKindsMeetOnlyThroughContracts(t *testing.T) {
	reg := pipeline.NewRegistry()
	stages.Builtin(reg)
	kinds := map[string]bool{}
	for _, k := range reg.Kinds() {
		kinds[k.Name] = true
	}
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		for _, problem := range kindRuleProblems(fset, f, filepath.Base(path), kinds) {
			t.Error(problem)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Fatalf("checked %d Go files under stages/: the walk did not find the kinds", files)
	}
}

// kindRuleProblems lists f's breaches of the rules above, each with its
// position.
func kindRuleProblems(fset *token.FileSet, f *ast.File, base string, kinds map[string]bool) []string {
	var out []string
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if (path == "cuelang.org/go" || strings.HasPrefix(path, "cuelang.org/go/")) && base != "config.go" {
			out = append(out, fmt.Sprintf("%s: imports %s outside the kind's config.go: a kind decodes only its own configuration from CUE, and learns from other kinds through pipeline contracts", fset.Position(imp.Pos()), path))
		}
	}
	// kindCompare says why x, compared with a string, compares kinds ("").
	kindCompare := func(x, other ast.Expr) string {
		if sel, ok := ast.Unparen(x).(*ast.SelectorExpr); ok && sel.Sel.Name == "Kind" {
			if lit, ok := ast.Unparen(other).(*ast.BasicLit); ok && lit.Kind == token.STRING {
				return fmt.Sprintf("compares .Kind with %s", lit.Value)
			}
		}
		if lit, ok := ast.Unparen(x).(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if name, err := strconv.Unquote(lit.Value); err == nil && kinds[name] {
				return fmt.Sprintf("compares with the kind name %s", lit.Value)
			}
		}
		return ""
	}
	report := func(at token.Pos, why string) {
		out = append(out, fmt.Sprintf("%s: %s: a kind does not test another's kind name; ask for a pipeline contract (an interface) instead", fset.Position(at), why))
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if n.Op != token.EQL && n.Op != token.NEQ {
				return true
			}
			if why := cmp.Or(kindCompare(n.X, n.Y), kindCompare(n.Y, n.X)); why != "" {
				report(n.Pos(), why)
			}
		case *ast.SwitchStmt:
			for _, stmt := range n.Body.List {
				// A tagless switch's cases are comparisons of their own,
				// which the BinaryExpr case sees.
				for _, e := range stmt.(*ast.CaseClause).List {
					if n.Tag == nil {
						continue
					}
					if why := cmp.Or(kindCompare(n.Tag, e), kindCompare(e, n.Tag)); why != "" {
						report(e.Pos(), why)
					}
				}
			}
		}
		return true
	})
	slices.Sort(out)
	return out
}

// TestKindRuleProblems: the checker above sees each way of breaking the
// rules, and lets what is not a kind test pass.
func TestKindRuleProblems(t *testing.T) {
	kinds := map[string]bool{"launch": true, "health": true}
	tests := []struct {
		name, file, src string
		want            int
	}{
		{"cue outside config.go", "x.go", `import "cuelang.org/go/cue"; var _ cue.Value`, 1},
		{"cue in config.go", "config.go", `import "cuelang.org/go/cue"; var _ cue.Value`, 0},
		{"a spec's kind", "x.go", `func f(st *S) bool { return st.Kind == "launch" }`, 1},
		{"reversed and negated", "x.go", `func f(st *S) bool { return "anything" != (st.Kind) }`, 1},
		{"a kind name in a variable", "x.go", `func f(k string) bool { return k == "health" }`, 1},
		{"a switch on the kind", "x.go", `func f(st *S) { switch st.Kind { case "sweep": } }`, 1},
		{"a switch on a name", "x.go", `func f(k string) { switch k { case "exec", "launch": } }`, 1},
		{"a tagless switch", "x.go", `func f(k string) { switch { case k == "health": } }`, 1},
		{"not a kind", "x.go", `func f(c *C) bool { return c.Endpoint == "embeddings" || c.Restart == "per_cell" }`, 0},
		{"naming a kind in a message", "x.go", `var m = "add a health stage: " + "health"`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, tt.file, "package x\n"+tt.src+"\n", 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := kindRuleProblems(fset, f, tt.file, kinds); len(got) != tt.want {
				t.Errorf("%d problems, want %d: %q", len(got), tt.want, got)
			}
		})
	}
}
