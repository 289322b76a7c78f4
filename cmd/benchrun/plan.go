package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages"
)

// registry returns the registry with every built-in kind.
func registry() *pipeline.Registry {
	reg := pipeline.NewRegistry()
	stages.Builtin(reg)
	return reg
}

// loadGraph loads a plan and builds its graph, reporting every problem at
// once: the schema's, and (on the partial plan the loader returns with
// them) the graph's: kinds, edges, cycles, `when` and assertions.
func loadGraph(path string, tags []string, reg *pipeline.Registry) (*pipeline.Graph, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, schema.Errors{{Pos: schema.Pos{File: path}, Msg: fmt.Sprintf("cannot read plan: %v", err)}}
	}
	return loadGraphSource(path, src, tags, reg)
}

// loadGraphSource is loadGraph on a plan already read.
func loadGraphSource(path string, src []byte, tags []string, reg *pipeline.Registry) (*pipeline.Graph, error) {
	p, lerr := schema.LoadSource(path, src, reg.LoadOptions(tags))
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
