package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/pipeline"
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

// TestCommandErrorsExit: a command's error is said once, prefixed with
// its name, and maps to its exit code; errUsage says the usage and
// flags; an exit code already said is only the code.
func TestCommandErrorsExit(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		code       int
		wantStderr string
	}{
		{"nil", nil, 0, ""},
		{"plain", errors.New("disk full"), pipeline.ExitInfra, "benchrun x: disk full\n"},
		{"coded", failf(pipeline.ExitInvalid, "--format %q: give a or b", "c"), pipeline.ExitInvalid, "benchrun x: --format \"c\": give a or b\n"},
		{"wrapped", fmt.Errorf("writing: %w", fail(pipeline.ExitInternal, errors.New("boom"))), pipeline.ExitInternal, "benchrun x: writing: boom\n"},
		{"said", exitWith(pipeline.ExitAssertion), pipeline.ExitAssertion, ""},
		{"said 0", exitWith(pipeline.ExitOK), 0, ""},
		{"usage", errUsage, pipeline.ExitInvalid, "usage: benchrun x A\n  -f\tthe flag\n"},
	} {
		c := command{name: "x", usage: "usage: benchrun x A\n", args: anyArgs, flags: func(fs *flag.FlagSet) runFunc {
			fs.Bool("f", false, "the flag")
			return func(context.Context, []string, io.Writer, io.Writer) error { return tc.err }
		}}
		var errb strings.Builder
		if code := c.call(context.Background(), nil, io.Discard, &errb); code != tc.code || errb.String() != tc.wantStderr {
			t.Errorf("%s: exit %d, stderr %q; want %d, %q", tc.name, code, errb.String(), tc.code, tc.wantStderr)
		}
	}
}

// TestCommandArity: a command given too few or too many arguments says
// its usage (or its own line) and exits 2 without running; a wrong flag
// says the flag package's error and the usage.
func TestCommandArity(t *testing.T) {
	ran := false
	c := command{name: "x", usage: "usage: benchrun x A [B]\n", args: arity{min: 1, max: 2}, flags: func(fs *flag.FlagSet) runFunc {
		return func(context.Context, []string, io.Writer, io.Writer) error { ran = true; return nil }
	}}
	for _, args := range [][]string{nil, {"a", "b", "c"}, {"--nope", "a"}} {
		var errb strings.Builder
		if code := c.call(context.Background(), args, io.Discard, &errb); code != 2 || !strings.Contains(errb.String(), "usage: benchrun x A [B]\n") || ran {
			t.Errorf("%q: exit %d, ran %v, stderr %q", args, code, ran, errb.String())
		}
	}
	c.args.said = func(args []string) string { return fmt.Sprintf("benchrun x: %d arguments", len(args)) }
	var errb strings.Builder
	if code := c.call(context.Background(), nil, io.Discard, &errb); code != 2 || errb.String() != "benchrun x: 0 arguments\n" {
		t.Errorf("said: exit %d, stderr %q", code, errb.String())
	}
	if code := c.call(context.Background(), []string{"a", "b"}, io.Discard, io.Discard); code != 0 || !ran {
		t.Errorf("two arguments: exit %d, ran %v", code, ran)
	}
}
