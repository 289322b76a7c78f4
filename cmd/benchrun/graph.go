package main

import (
	"context"
	"flag"
	"io"

	"github.com/benchrun/benchrun/pipeline"
)

// graphFlags declares `benchrun graph`'s flags: a plan's DAG on stdout
// as Mermaid or DOT.
func graphFlags(fs *flag.FlagSet) runFunc {
	var tags stringList
	fs.Var(&tags, "t", "set a @tag field: -t key=value (repeatable)")
	format := fs.String("format", "mermaid", "mermaid or dot")
	return func(ctx context.Context, plans []string, stdout, stderr io.Writer) error {
		if *format != "mermaid" && *format != "dot" {
			return failf(pipeline.ExitInvalid, "--format %s: want mermaid or dot", *format)
		}
		g, err := loadGraphContext(ctx, plans[0], tags, registry())
		if err != nil {
			return exitWith(planErrorExit(stderr, err))
		}
		if *format == "dot" {
			return g.WriteDot(stdout)
		}
		return g.WriteMermaid(stdout)
	}
}
