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

// rowWalks lists "file" for each non-test Go file under root (outside
// internal/results and testdata) that walks a struct's fields by
// reflection (reflect's NumField, Field or FieldByName on a type or
// value): the walk over a row's columns is Columns' and Fields', here.
func rowWalks(t *testing.T, root string) []string {
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
		if !importsReflect(f) {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				switch sel.Sel.Name {
				case "NumField", "FieldByName", "FieldByIndex":
					out = append(out, rel+": "+sel.Sel.Name)
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

func importsReflect(f *ast.File) bool {
	for _, im := range f.Imports {
		if im.Path.Value == `"reflect"` {
			return true
		}
	}
	return false
}

// TestNoRowWalks: no code outside internal/results keeps its own
// reflection walk over a row's fields (a private column index drifts
// from the catalogue); it reads columns through Lookup and Columns, and
// an encoder's layout through Fields.
//
// Two generic walks are not column indexes and stay where they are:
// safetext's, which escapes every string of any value it is given (a row,
// a manifest, a document), and resultdoc's, over result.json's own
// document type, not a row.
func TestNoRowWalks(t *testing.T) {
	allowed := map[string]bool{
		filepath.Join("internal", "safetext", "walk.go"):                true,
		filepath.Join("sinks", "internal", "resultdoc", "resultdoc.go"): true,
	}
	for _, w := range rowWalks(t, filepath.Join("..", "..")) {
		if file, _, _ := strings.Cut(w, ": "); allowed[file] {
			continue
		}
		t.Errorf("%s: a reflection walk over a struct's fields outside internal/results; use results.Columns, Lookup or Fields", w)
	}
}
