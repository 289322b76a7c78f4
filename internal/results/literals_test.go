package results

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// metricNames are the names the literal rule guards: the nullable columns
// with a direction, the metrics.
func metricNames(cols []Column) map[string]bool {
	out := map[string]bool{}
	for _, c := range cols {
		if c.Nullable && c.Better != Neither {
			out[c.Name] = true
		}
	}
	return out
}

// columnLiterals lists "file: name" for each string literal in the
// non-test Go files under root (internal/results and testdata aside)
// that spells one of names.
func columnLiterals(t *testing.T, root string, names map[string]bool) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == filepath.Join("internal", "results")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && names[s] {
					out = append(out, rel+": "+strconv.Quote(s))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestNoColumnLiterals: code outside internal/results names a metric
// column by its constant (results.ColTTFTP99Ms) or through the catalogue,
// never as a string literal, so that a column's name, like the rest of
// what is known of it, is written once.
func TestNoColumnLiterals(t *testing.T) {
	for _, l := range columnLiterals(t, filepath.Join("..", ".."), metricNames(Columns())) {
		t.Errorf("%s: a metric column's name as a string literal; use its results.Col constant or results.Lookup", l)
	}
}
