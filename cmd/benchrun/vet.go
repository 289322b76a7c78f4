package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/benchrun/benchrun/pipeline"
)

// vetFlags declares `benchrun vet`'s flags: it checks plans without
// running anything: every problem of every plan, each with
// file:line:col, on stderr. Exit 0 when all are clean, 2 otherwise.
func vetFlags(fs *flag.FlagSet) runFunc {
	var tags stringList
	fs.Var(&tags, "t", "set a @tag field: -t key=value (repeatable)")
	quiet := fs.Bool("q", false, "print nothing for clean plans")
	return func(ctx context.Context, plans []string, stdout, stderr io.Writer) error {
		reg := registry()
		code := pipeline.ExitOK
		for _, p := range plans {
			g, err := loadGraphContext(ctx, p, tags, reg)
			if code, ok := interruptedLoad(stderr, err); ok {
				return exitWith(code)
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
		return exitWith(code)
	}
}

// printWarnings prints a plan's vet warnings as "file:line:col: warning: ...".
func printWarnings(w io.Writer, g *pipeline.Graph) {
	for _, e := range g.Warnings {
		fmt.Fprintf(w, "%s: warning: %s\n", e.Pos, e.Msg)
	}
}
