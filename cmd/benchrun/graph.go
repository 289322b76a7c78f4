package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/benchrun/benchrun/pipeline"
)

// runGraph prints a plan's DAG on stdout as Mermaid or DOT.
func runGraph(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("graph", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var tags stringList
	fs.Var(&tags, "t", "set a @tag field: -t key=value (repeatable)")
	format := fs.String("format", "mermaid", "mermaid or dot")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: benchrun graph PLAN [--format mermaid|dot] [-t key=value]")
		fs.PrintDefaults()
	}
	plans, err := parseInterspersed(fs, args)
	if err != nil {
		return pipeline.ExitInvalid
	}
	if len(plans) != 1 {
		fs.Usage()
		return pipeline.ExitInvalid
	}
	if *format != "mermaid" && *format != "dot" {
		fmt.Fprintf(stderr, "benchrun graph: --format %s: want mermaid or dot\n", *format)
		return pipeline.ExitInvalid
	}
	g, err := loadGraphContext(ctx, plans[0], tags, registry())
	if err != nil {
		return planErrorExit(stderr, err)
	}
	if *format == "dot" {
		err = g.WriteDot(stdout)
	} else {
		err = g.WriteMermaid(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "benchrun graph:", err)
		return pipeline.ExitInfra
	}
	return pipeline.ExitOK
}
