package main

import (
	"fmt"
	"io"
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

// loadGraph loads a plan and builds its graph, reporting every problem.
func loadGraph(path string, tags []string, reg *pipeline.Registry) (*pipeline.Graph, error) {
	p, err := schema.Load(path, schema.Options{Tags: tags, Kinds: reg.Schemas()})
	if err != nil {
		return nil, err
	}
	g, err := pipeline.Build(p, reg)
	if err != nil {
		return nil, err
	}
	// Compile every assertion now, so a misspelt column fails before anything runs.
	var errs schema.Errors
	for _, n := range g.Nodes {
		all := n.Spec.Assert
		if n.Kind.Measuring {
			all = append(all, p.Assert...)
		}
		for _, a := range all {
			if _, err := pipeline.CompileAssertion(a, n.Spec.Name); err != nil {
				if e, ok := err.(schema.Error); ok {
					errs = append(errs, e)
				} else {
					errs = append(errs, schema.Error{Pos: a.Pos, Msg: err.Error()})
				}
			}
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

// stringList is a repeatable flag (-t a=b -t c=d).
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
