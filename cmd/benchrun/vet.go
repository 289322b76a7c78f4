package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/benchrun/benchrun/pipeline"
)

// runVet checks plans without running anything: every problem of every
// plan, each with file:line:col, on stderr. Exit 0 when all are clean, 2
// otherwise.
func runVet(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var tags stringList
	fs.Var(&tags, "t", "set a @tag field: -t key=value (repeatable)")
	quiet := fs.Bool("q", false, "print nothing for clean plans")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: benchrun vet PLAN... [-t key=value]")
		fs.PrintDefaults()
	}
	plans, err := parseInterspersed(fs, args)
	if err != nil {
		return pipeline.ExitInvalid
	}
	if len(plans) == 0 {
		fs.Usage()
		return pipeline.ExitInvalid
	}
	reg := registry()
	code := pipeline.ExitOK
	for _, p := range plans {
		g, err := loadGraphContext(ctx, p, tags, reg)
		if code, ok := interruptedLoad(stderr, err); ok {
			return code
		}
		if err != nil {
			printPlanError(stderr, err)
			n := problemCount(err)
			noun := "problems"
			if n == 1 {
				noun = "problem"
			}
			fmt.Fprintf(stderr, "%s: %d %s\n", p, n, noun)
			code = pipeline.ExitInvalid
			continue
		}
		printWarnings(stderr, g)
		if !*quiet {
			if n := len(g.Warnings); n > 0 {
				fmt.Fprintf(stderr, "%s: ok, %d %s\n", p, n, map[bool]string{true: "warning", false: "warnings"}[n == 1])
			} else {
				fmt.Fprintf(stderr, "%s: ok\n", p)
			}
		}
	}
	return code
}

// printWarnings prints a plan's vet warnings as "file:line:col: warning: ...".
func printWarnings(w io.Writer, g *pipeline.Graph) {
	for _, e := range g.Warnings {
		fmt.Fprintf(w, "%s: warning: %s\n", e.Pos, e.Msg)
	}
}
