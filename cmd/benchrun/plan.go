package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/sinks"
	"github.com/benchrun/benchrun/stages"
)

// registry returns the registry with every built-in stage and sink kind:
// the one registry run, vet, graph, list, schema and report all use.
func registry() *pipeline.Registry {
	reg := pipeline.NewRegistry()
	stages.Builtin(reg)
	sinks.Builtin(reg)
	return reg
}

// loadGraph loads a plan and builds its graph, reporting every problem at
// once: the schema's, and (on the partial plan the loader returns with
// them) the graph's: kinds, edges, cycles, `when` and assertions.
// A plan over schema.MaxPlanBytes is refused before it is read.
func loadGraph(path string, tags []string, reg *pipeline.Registry) (*pipeline.Graph, error) {
	p, lerr := schema.Load(path, reg.LoadOptions(tags))
	return buildGraph(path, p, lerr, reg)
}

// loadGraphContext is loadGraph that gives up when ctx ends (the first
// SIGINT or SIGTERM): CUE's evaluation cannot be cancelled, and a large
// plan takes long enough that an interrupt must not wait for it. The load
// goes on in its goroutine until benchrun exits, which it then does.
func loadGraphContext(ctx context.Context, path string, tags []string, reg *pipeline.Registry) (*pipeline.Graph, error) {
	if ctx.Err() != nil {
		return nil, &loadInterrupted{path: path, cause: context.Cause(ctx)}
	}
	type loaded struct {
		g   *pipeline.Graph
		err error
	}
	done := make(chan loaded, 1)
	go func() {
		g, err := loadGraph(path, tags, reg)
		done <- loaded{g, err}
	}()
	// The heap is polled, not limited: a plan that generates gigabytes
	// (a string doubled 24 times) is given up at the budget with a plan
	// error, before the machine swaps or the kernel kills benchrun.
	base := schema.EvalHeapBytes()
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case r := <-done:
			return r.g, r.err
		case <-ctx.Done():
			return nil, &loadInterrupted{path: path, cause: context.Cause(ctx)}
		case <-poll.C:
			// One reading: a heap that shrank below base (a collection)
			// has grown by nothing.
			if overBudget(base, schema.EvalHeapBytes()) {
				return nil, schema.Errors{{Pos: schema.Pos{File: path}, Msg: fmt.Sprintf("evaluating the plan took over %d MiB of memory and was given up: something in it generates far more than a plan needs (a string built by repeated doubling, a comprehension over a huge range); the limits are in docs/PLANS.md", schema.MaxEvalHeapBytes>>20)}}
			}
		}
	}
}

// overBudget says whether the heap grew past the evaluation budget from
// base to now (two readings of schema.EvalHeapBytes): a heap that shrank
// (a collection ran) grew by nothing.
func overBudget(base, now uint64) bool {
	return now > base && now-base > schema.MaxEvalHeapBytes
}

// loadInterrupted is a plan load given up on an interrupt.
type loadInterrupted struct {
	path  string
	cause error
}

func (e *loadInterrupted) Error() string {
	return fmt.Sprintf("%v while loading %s: nothing was run", e.cause, e.path)
}

// interruptedLoad prints an interrupted load and returns exit 130, or
// returns false when err is a plan's problems.
func interruptedLoad(stderr io.Writer, err error) (int, bool) {
	var li *loadInterrupted
	if !errors.As(err, &li) {
		return 0, false
	}
	fmt.Fprintln(stderr, "benchrun:", li)
	return pipeline.ExitInterrupted, true
}

// planErrorExit prints a failed load and returns its exit code: 130 for
// an interrupt, 2 for the plan's problems.
func planErrorExit(stderr io.Writer, err error) int {
	if code, ok := interruptedLoad(stderr, err); ok {
		return code
	}
	printPlanError(stderr, err)
	return pipeline.ExitInvalid
}

// loadGraphSource is loadGraph on a plan already read.
func loadGraphSource(path string, src []byte, tags []string, reg *pipeline.Registry) (*pipeline.Graph, error) {
	p, lerr := schema.LoadSource(path, src, reg.LoadOptions(tags))
	return buildGraph(path, p, lerr, reg)
}

// buildGraph builds the graph of the plan the loader returned with its
// problems lerr (a partial plan with them), and reports both at once; a
// load that returned no plan (an unreadable file) is lerr alone.
func buildGraph(path string, p *schema.Plan, lerr error, reg *pipeline.Registry) (*pipeline.Graph, error) {
	if p == nil {
		return nil, lerr
	}
	g, berr := pipeline.Build(p, reg)
	var errs schema.Errors
	for _, err := range []error{lerr, berr} {
		if err == nil {
			continue
		}
		var es schema.Errors
		if errors.As(err, &es) {
			errs = append(errs, es...)
		} else {
			errs = append(errs, schema.Error{Pos: schema.Pos{File: path}, Msg: err.Error()})
		}
	}
	if len(errs) > 0 {
		return nil, errs.Sort()
	}
	return g, nil
}

// printPlanError prints a plan error as file:line:col lines.
func printPlanError(w io.Writer, err error) {
	msg := err.Error()
	for _, line := range strings.Split(msg, "\n") {
		fmt.Fprintln(w, line)
	}
}

// problemCount is how many problems err holds (one per schema.Error).
func problemCount(err error) int {
	var es schema.Errors
	if errors.As(err, &es) {
		return len(es)
	}
	return 1
}

// onceFlag is a single-valued flag that refuses to be given twice: the
// flag package silently keeps the last (`--out a --out b` ran into b).
type onceFlag struct {
	value string
	set   bool
}

func (f *onceFlag) String() string {
	if f == nil {
		return ""
	}
	return f.value
}

func (f *onceFlag) Set(v string) error {
	if f.set {
		return fmt.Errorf("given twice (%q, then %q): give it once", f.value, v)
	}
	f.value, f.set = v, true
	return nil
}

// onceString defines a string flag that may be given at most once.
func onceString(fs *flag.FlagSet, name, value, usage string) *string {
	f := &onceFlag{value: value}
	fs.Var(f, name, usage)
	return &f.value
}

// checkOutDir refuses an --out that cannot become a directory (a file is
// there, or on the way there): a command-line error, exit 2, not the
// infrastructure failure that creating it would report.
func checkOutDir(out string) error {
	want := filepath.Clean(out)
	for p := want; ; {
		if fi, err := os.Stat(p); err == nil {
			switch {
			case fi.IsDir():
				return nil
			case p == want:
				return fmt.Errorf("--out %s: a file is there, not a directory (--out names the directory under which run directories are created)", out)
			default:
				return fmt.Errorf("--out %s: %s is a file, not a directory (--out names the directory under which run directories are created)", out, p)
			}
		}
		parent := filepath.Dir(p)
		if parent == p {
			return nil
		}
		p = parent
	}
}

// stringList is a repeatable flag (-t a=b -t c=d).
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// parseInterspersed parses flags that may come before, between and after
// positional arguments (`benchrun vet a.cue -t x=1 b.cue`).
func parseInterspersed(fs interface {
	Parse([]string) error
	NArg() int
	Arg(int) string
	Args() []string
}, args []string) ([]string, error) {
	var pos []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
}
