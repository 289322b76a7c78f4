package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/benchrun/benchrun/internal/sim"
)

// The tests run a command as `benchrun NAME ARGS...` runs it, without
// the rest of benchrunMain (signals, supervision, the CSV queue).

func runCommand(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	c, ok := lookup(name)
	if !ok {
		panic("no command " + name)
	}
	return c.call(ctx, args, stdout, stderr)
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runCommand(ctx, "run", args, stdout, stderr)
}

func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runCommand(ctx, "sim", args, stdout, stderr)
}

func runSelfBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runCommand(ctx, "self-bench", args, stdout, stderr)
}

// parseSimFlags reads `benchrun sim`'s command line as the command does,
// and returns the configuration it would serve; code is -1 to serve, or
// the exit code the command would return at once (0 for --help, 2 for a
// bad command line).
func parseSimFlags(args []string, stderr io.Writer) (cfg sim.Config, addr string, code int) {
	c, _ := lookup("sim")
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := declareSim(fs)
	fs.Usage = func() { c.writeUsage(stderr, fs, "") }
	pos, err := c.parse(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return o.cfg, "", 0
	case err != nil:
		return o.cfg, "", 2
	case len(pos) > 0:
		fmt.Fprintln(stderr, c.args.said(pos))
		return o.cfg, "", 2
	}
	if cfg, err = o.config(); err != nil {
		fmt.Fprintf(stderr, "benchrun sim: %v\n", err)
		return cfg, "", 2
	}
	return cfg, *o.addr, -1
}

func runList(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runCommand(ctx, "list", args, stdout, stderr)
}

func runSchema(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runCommand(ctx, "schema", args, stdout, stderr)
}
