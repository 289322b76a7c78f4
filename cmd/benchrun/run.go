package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/benchrun/benchrun/pipeline"
	csvsink "github.com/benchrun/benchrun/sinks/csv"
	parquetsink "github.com/benchrun/benchrun/sinks/parquet"
)

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var tags stringList
	fs.Var(&tags, "t", "set a @tag field: -t key=value (repeatable)")
	out := fs.String("out", "runs", "directory under which run directories are created")
	columns := fs.String("columns", "", "comma-separated CSV columns for stdout (default: the seed bench columns)")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	plan, rest, err := splitPlanArg(args)
	if err != nil {
		fmt.Fprintln(stderr, "benchrun:", err)
		return pipeline.ExitInvalid
	}
	if err := fs.Parse(rest); err != nil {
		return pipeline.ExitInvalid
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "benchrun: unexpected arguments %q\n", fs.Args())
		return pipeline.ExitInvalid
	}
	progress := stderr
	if *quiet {
		progress = io.Discard
	}

	g, err := loadGraph(plan, tags, registry())
	if err != nil {
		printPlanError(stderr, err)
		return pipeline.ExitInvalid
	}
	var cols []string
	if *columns != "" {
		cols = strings.Split(*columns, ",")
	}
	csvOut, err := csvsink.New(stdout, cols)
	if err != nil {
		fmt.Fprintln(stderr, "benchrun: --columns:", err)
		return pipeline.ExitInvalid
	}
	ri, err := pipeline.NewRunInfo(*out, g.Plan, tags, time.Now())
	if err != nil {
		fmt.Fprintln(stderr, "benchrun:", err)
		return pipeline.ExitInfra
	}
	fmt.Fprintf(progress, "benchrun: plan %s, run %s\n", g.Plan.Name, ri.Dir)
	sum, err := pipeline.Run(ctx, g, ri, pipeline.Options{
		Outputs:  []pipeline.Output{csvOut, parquetsink.New()},
		Progress: progress,
	})
	if err != nil {
		fmt.Fprintln(stderr, "benchrun:", err)
		return pipeline.ExitCode(err)
	}
	pipeline.PrintSummary(stderr, sum)
	return sum.ExitCode
}

// splitPlanArg takes the plan path from anywhere in args, so both
// `benchrun plan.cue -t a=b` and `benchrun -t a=b plan.cue` work.
func splitPlanArg(args []string) (string, []string, error) {
	var plan string
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "-"):
			rest = append(rest, a)
			if !strings.Contains(a, "=") && flagTakesValue(a) && i+1 < len(args) {
				rest = append(rest, args[i+1])
				i++
			}
		case plan == "":
			plan = a
		default:
			rest = append(rest, a)
		}
	}
	if plan == "" {
		return "", nil, fmt.Errorf("no plan file given (usage: benchrun PLAN.cue [flags])")
	}
	return plan, rest, nil
}

func flagTakesValue(f string) bool {
	switch strings.TrimLeft(f, "-") {
	case "quiet":
		return false
	}
	return true
}
