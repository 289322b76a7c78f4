// The architecture test: the rules of docs/DESIGN.md's layout that a
// machine can check, held in one place. It parses the module's Go source
// (non-test files unless a rule says otherwise):
//
//   - who may import whom (importProblem, TestImportRules);
//   - a stage kind decodes CUE only in its config.go and never tests
//     another kind's name (TestKindsMeetOnlyThroughContracts);
//   - the CLI writes no file by hand (TestCmdWritesNoFileByHand);
//   - no function over 150 lines, and the packages' size limits
//     (TestSizeLimits).
package archtest

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/stages"
)

// root is the module's root, from this package's directory.
const root = "../.."

const (
	module        = "github.com/benchrun/benchrun/"
	parquetModule = "github.com/parquet-go/parquet-go"
)

// importProblem says why the package in dir (slash-separated, relative to
// the module root) may not import path ("" when it may). The rules
// (docs/DESIGN.md, "Import rules"):
//
//   - nothing under internal/ imports pipeline, stages or sinks: the
//     engines sit below the runner and its components;
//   - pipeline imports no stage kind and no sink: it runs what it is given;
//   - a stage kind or a sink imports the component API (pipeline), never
//     the run engine (pipeline/engine);
//   - a stage kind imports no other kind, and a sink no other sink: what
//     they share lives in stages/internal or sinks/internal;
//   - the simulator and the load generator share no code, either way: the
//     simulator is the ground truth the load generator is checked against;
//   - the load generator is a library usable without plans: it imports no
//     schema;
//   - only internal/rundir (and test helpers) reads and writes Parquet: it
//     owns the run directory's tables;
//   - internal/merge imports no schema: it merges run directories, whatever
//     plan made them;
//   - the machine probe and its lateness rules (internal/machine) are read
//     by the sweep, judging, regression and the CLI (self-bench) only.
func importProblem(dir, path string) string {
	if path == parquetModule || strings.HasPrefix(path, parquetModule+"/") {
		if dir != "internal/rundir" && !strings.HasSuffix(dir, "test") {
			return dir + " imports " + path + ": internal/rundir owns the run directory's tables, reading and writing"
		}
		return ""
	}
	imp, ok := strings.CutPrefix(path, module)
	if !ok {
		return ""
	}
	top := func(p string) (string, string) {
		parts := strings.SplitN(p, "/", 3)
		if len(parts) < 2 {
			return parts[0], ""
		}
		return parts[0], parts[1]
	}
	dTop, dSub := top(dir)
	iTop, iSub := top(imp)
	switch {
	case dTop == "internal" && (iTop == "pipeline" || iTop == "stages" || iTop == "sinks"):
		return "a package under internal/ imports " + imp + ": engines sit below the runner and its components"
	case (dTop == "stages" || dTop == "sinks") && iTop == "pipeline" && iSub == "engine":
		return dir + " imports " + imp + ": kinds and sinks import the component API (pipeline), never the run engine"
	case dTop == "pipeline" && (iTop == "stages" || iTop == "sinks"):
		return "pipeline imports " + imp + ": the runner runs the kinds and sinks it is given"
	case dTop == "internal" && iTop == "internal" && (dSub == "sim" && iSub == "loadgen" || dSub == "loadgen" && iSub == "sim"):
		return fmt.Sprintf("internal/%s imports %s: the simulator is the ground truth the load generator is checked against, so they share no code", dSub, imp)
	case dTop == "internal" && dSub == "loadgen" && iTop == "schema":
		return "internal/loadgen imports " + imp + ": the load generator is a library usable without plans"
	case dir == "internal/merge" && iTop == "schema":
		return "internal/merge imports " + imp + ": merging run directories needs no plan (plan.json's slo is read as measure.SLO)"
	case imp == "internal/machine" && !machineReaders[dir] && dTop != "cmd" && !strings.HasPrefix(dir, "internal/machine/"):
		return dir + " imports " + imp + ": the machine probe and its lateness rules are the sweep's, judging's, regression's and the CLI's"
	case (dTop == "stages" || dTop == "sinks") && iTop == dTop && dSub != "" && dSub != "internal" && iSub != "" && iSub != "internal" && iSub != dSub:
		return fmt.Sprintf("%s/%s imports %s: components never import each other; shared code lives in %s/internal", dTop, dSub, imp, dTop)
	}
	return ""
}

// machineReaders are the packages besides cmd/ that may import
// internal/machine.
var machineReaders = map[string]bool{
	"stages/sweep": true, "pipeline/judge": true, "internal/regress": true, "internal/selfbench": true,
}

func TestImportRules(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || name == "node_modules" || (strings.HasPrefix(name, ".") && path != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if why := importProblem(filepath.ToSlash(rel), p); why != "" {
				t.Errorf("%s: %s", fset.Position(imp.Pos()), why)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("checked %d Go files: the walk did not find the module", files)
	}
}

func TestImportProblem(t *testing.T) {
	for _, c := range []struct {
		dir, imp string
		bad      bool
	}{
		{"internal/merge", module + "sinks/parquet", true},
		{"internal/remote", module + "pipeline", true},
		{"internal/merge", module + "internal/rundir", false},
		{"pipeline", module + "stages/sweep", true},
		{"stages/sweep", module + "pipeline/engine", true},
		{"sinks/report", module + "pipeline/engine", true},
		{"stages/sweep", module + "pipeline", false},
		{"cmd/benchrun", module + "pipeline/engine", false},
		{"pipeline", module + "internal/remote", false},
		{"sinks/webhook", module + "sinks/jsonsink", true},
		{"sinks/siyuan", module + "sinks/internal/runview", false},
		{"sinks", module + "sinks/jsonsink", false}, // the registry lists them all
		{"stages/exec", module + "stages/launch", true},
		{"stages/exec/sub", module + "stages/launch", true},
		{"stages/launch", module + "stages/launch/sub", false},
		{"stages/internal/program", module + "stages/internal/client", false},
		{"cmd/benchrun", module + "sinks/report", false},
		{"internal/merge", "github.com/parquet-go/parquet-go", true},
		{"sinks/parquet", "github.com/parquet-go/parquet-go/compress/zstd", true},
		{"internal/rundir", "github.com/parquet-go/parquet-go", false},
		{"internal/results/resultstest", "github.com/parquet-go/parquet-go", false},
		{"internal/merge", "github.com/apache/arrow-go/v18/arrow", false},
		{"internal/sim", module + "internal/loadgen/sse", true},
		{"internal/loadgen", module + "internal/sim", true},
		{"internal/loadgen/sse", module + "internal/sim/x", true},
		{"internal/sim", module + "internal/results", false},
		{"internal/loadgen", module + "schema", true},
		{"internal/loadgen", module + "internal/results", false},
		{"stages/sweep", module + "internal/sim", false},
		{"internal/merge", module + "schema", true},
		{"internal/merge", module + "internal/measure", false},
		{"internal/rundir", module + "schema", false},
		{"stages/sweep", module + "internal/machine", false},
		{"cmd/benchrun", module + "internal/machine", false},
		{"sinks/report", module + "internal/machine", true},
		{"internal/measure", module + "internal/machine", true},
	} {
		if got := importProblem(c.dir, c.imp) != ""; got != c.bad {
			t.Errorf("importProblem(%q, %q) = %v, want %v", c.dir, c.imp, got, c.bad)
		}
	}
}

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
	err := filepath.WalkDir(filepath.Join(root, "stages"), func(path string, d fs.DirEntry, err error) error {
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

// fileWriters are the calls that write a file by hand. The CLI writes its
// output files (HTML pages, manifests, the self-bench cache) through
// rundir.WriteFileAtomic, so a reader never sees half a file and a failed
// write leaves the old one (docs/DESIGN.md, "Who may import whom").
var fileWriters = map[string]bool{"os.WriteFile": true, "os.Create": true, "os.OpenFile": true, "ioutil.WriteFile": true}

func TestCmdWritesNoFileByHand(t *testing.T) {
	var files []string
	// The CLI's folder, and the engines of its commands that write files
	// (compare's and history's pages, the self-bench cache).
	for _, dir := range []string{"cmd/benchrun", "internal/compare", "internal/selfbench"} {
		found, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(dir), "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, found...)
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

// maxFuncLines bounds a function's length, from its func keyword to its
// closing brace, in non-test files: a longer one does several things.
const maxFuncLines = 150

// packageLimits bound a package directory's non-test lines (every line of
// its .go files but the _test.go ones): what a kind or sink author reads
// (pipeline/), the CLI's wiring and the run engine stay small enough to
// read in a sitting.
var packageLimits = map[string]int{
	"pipeline":     3_000,
	"cmd/benchrun": 2_500,
}

// engineLimit bounds each package directory of the run engine: any under
// pipeline/ but the component API itself, and any named engine or runner.
const engineLimit = 4_500

// limitOf is the most non-test lines dir may hold (0: no limit).
func limitOf(dir string) int {
	if n, ok := packageLimits[dir]; ok {
		return n
	}
	if base := filepath.Base(dir); strings.HasPrefix(dir, "pipeline/") || base == "engine" || base == "runner" {
		return engineLimit
	}
	return 0
}

func TestSizeLimits(t *testing.T) {
	fset := token.NewFileSet()
	lines := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || name == "node_modules" || (strings.HasPrefix(name, ".") && path != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		lines[filepath.ToSlash(rel)] += strings.Count(string(src), "\n")
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, pos := range longFuncs(fset, f) {
			t.Errorf("%s: a function over %d lines: split it", fset.Position(pos), maxFuncLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if lines["pipeline"] == 0 || lines["cmd/benchrun"] == 0 {
		t.Fatalf("the walk found no pipeline/ or cmd/benchrun/ source: %v", lines)
	}
	for _, dir := range slices.Sorted(maps.Keys(lines)) {
		if limit := limitOf(dir); limit > 0 && lines[dir] > limit {
			t.Errorf("%s/: %d non-test lines, over its limit of %d", dir, lines[dir], limit)
		}
	}
}

// longFuncs are the positions of f's functions and methods over
// maxFuncLines.
func longFuncs(fset *token.FileSet, f *ast.File) []token.Pos {
	var out []token.Pos
	for _, decl := range f.Decls {
		if fd, ok := decl.(*ast.FuncDecl); ok && fd.Body != nil {
			if fset.Position(fd.End()).Line-fset.Position(fd.Pos()).Line+1 > maxFuncLines {
				out = append(out, fd.Pos())
			}
		}
	}
	return out
}

// The size rules' own checks: a long function is found, a short one is
// not, and the engine's directories are bounded wherever they land.
func TestSizeRules(t *testing.T) {
	long := "package p\nfunc long() {\n" + strings.Repeat("\t_ = 1\n", maxFuncLines-1) + "}\nfunc short() {}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", long, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := longFuncs(fset, f); len(got) != 1 || fset.Position(got[0]).Line != 2 {
		t.Errorf("long functions at %v, want the one on line 2", got)
	}
	for dir, want := range map[string]int{
		"pipeline/engine": engineLimit, "internal/engine": engineLimit, "internal/runner": engineLimit,
		"cmd/benchrun": packageLimits["cmd/benchrun"], "internal/loadgen": 0,
	} {
		if got := limitOf(dir); got != want {
			t.Errorf("limitOf(%q) = %d, want %d", dir, got, want)
		}
	}
}
