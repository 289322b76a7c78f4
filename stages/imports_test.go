package stages_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

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
//   - a stage kind imports no other kind, and a sink no other sink: what
//     they share lives in stages/internal or sinks/internal;
//   - the simulator and the load generator share no code, either way: the
//     simulator is the ground truth the load generator is checked against;
//   - the load generator is a library usable without plans: it imports no
//     schema;
//   - only internal/rundir (and test helpers) reads and writes Parquet: it
//     owns the run directory's tables.
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
	case dTop == "pipeline" && (iTop == "stages" || iTop == "sinks"):
		return "pipeline imports " + imp + ": the runner runs the kinds and sinks it is given"
	case dTop == "internal" && iTop == "internal" && (dSub == "sim" && iSub == "loadgen" || dSub == "loadgen" && iSub == "sim"):
		return fmt.Sprintf("internal/%s imports %s: the simulator is the ground truth the load generator is checked against, so they share no code", dSub, imp)
	case dTop == "internal" && dSub == "loadgen" && iTop == "schema":
		return "internal/loadgen imports " + imp + ": the load generator is a library usable without plans"
	case (dTop == "stages" || dTop == "sinks") && iTop == dTop && dSub != "" && dSub != "internal" && iSub != "" && iSub != "internal" && iSub != dSub:
		return fmt.Sprintf("%s/%s imports %s: components never import each other; shared code lives in %s/internal", dTop, dSub, imp, dTop)
	}
	return ""
}

func TestImportRules(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || name == "node_modules" || (strings.HasPrefix(name, ".") && path != "..") {
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
		rel, _ := filepath.Rel("..", filepath.Dir(path))
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
	} {
		if got := importProblem(c.dir, c.imp) != ""; got != c.bad {
			t.Errorf("importProblem(%q, %q) = %v, want %v", c.dir, c.imp, got, c.bad)
		}
	}
}
