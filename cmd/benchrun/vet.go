package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/benchrun/benchrun/pipeline"
)

func runVet(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var tags stringList
	fs.Var(&tags, "t", "set a @tag field: -t key=value (repeatable)")
	var plans []string
	rest := args
	for len(rest) > 0 {
		if err := fs.Parse(rest); err != nil {
			return pipeline.ExitInvalid
		}
		if fs.NArg() == 0 {
			break
		}
		plans = append(plans, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(plans) == 0 {
		fmt.Fprintln(stderr, "usage: benchrun vet PLAN... [-t key=value]")
		return pipeline.ExitInvalid
	}
	reg := registry()
	code := pipeline.ExitOK
	for _, p := range plans {
		if _, err := loadGraph(p, tags, reg); err != nil {
			printPlanError(stderr, err)
			code = pipeline.ExitInvalid
			continue
		}
		fmt.Fprintf(stderr, "%s: ok\n", p)
	}
	return code
}
