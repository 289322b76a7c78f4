package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// fileWriters are the calls that write a file by hand. The CLI writes its
// output files (HTML pages, manifests, the self-bench cache) through
// rundir.WriteFileAtomic, so a reader never sees half a file and a failed
// write leaves the old one (docs/DESIGN.md, "Who may import whom").
var fileWriters = map[string]bool{"os.WriteFile": true, "os.Create": true, "os.OpenFile": true, "ioutil.WriteFile": true}

func TestCmdWritesNoFileByHand(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, pos := range handWrites(f) {
			t.Errorf("%s: writes a file by hand: use rundir.WriteFileAtomic", fset.Position(pos))
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d files: not the CLI's folder", checked)
	}
}

// handWrites are the positions of f's calls to a fileWriters function.
func handWrites(f *ast.File) []token.Pos {
	var out []token.Pos
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if pkg, ok := sel.X.(*ast.Ident); ok && fileWriters[pkg.Name+"."+sel.Sel.Name] {
			out = append(out, call.Pos())
		}
		return true
	})
	return out
}

// The rule's own check finds a hand write and passes an atomic one.
func TestHandWrites(t *testing.T) {
	for src, want := range map[string]int{
		`package p; func f() { os.WriteFile("x", nil, 0o644) }`:                         1,
		`package p; func f() { g, _ := os.Create("x"); g.Close() }`:                     1,
		`package p; func f() { rundir.WriteFileAtomic("x", nil); os.MkdirAll("d", 0) }`: 0,
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(handWrites(f)); got != want {
			t.Errorf("%s: %d hand writes, want %d", src, got, want)
		}
	}
}
