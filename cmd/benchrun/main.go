// Command benchrun runs LLM-serving benchmarks from CUE plan files.
//
// stdout carries data (CSV rows); stderr carries everything meant for people.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/benchrun/benchrun/internal/csvout"
	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/supervise"
	"github.com/benchrun/benchrun/pipeline"
)

func main() {
	// A load generator trades memory for its schedule (loadgen.TuneGC);
	// GOGC and GOMEMLIMIT still win. The simulator is the server under
	// test, not the client: it runs as Go sets it, as a real server would.
	if len(os.Args) < 2 || os.Args[1] != "sim" {
		loadgen.TuneGC()
	}
	os.Exit(benchrunMain(os.Args[1:], os.Stdout, os.Stderr))
}

func benchrunMain(args []string, stdout, stderr io.Writer) (code int) {
	// A panic on the way (loading, vetting, the run's own goroutine: a
	// stage's panic is its failure, and the run re-panics once its
	// manifest is finished) is a crash, never a user error: exit 4.
	defer func() {
		if v := recover(); v != nil {
			fmt.Fprintf(stderr, "benchrun: internal error (a bug in benchrun, please report it): panic: %v\n\n%s", v, debug.Stack())
			code = pipeline.ExitInternal
		}
	}()
	// With SIGPIPE handled, a write to a closed stdout returns EPIPE
	// instead of killing benchrun (Go's runtime does that for fds 1 and 2
	// only while SIGPIPE is not notified): a closed pipe (`| head`) stops
	// the CSV, not the run.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	if len(args) > 0 && supervised(args) && stderr == io.Writer(os.Stderr) {
		if code, ok := superviseRun(args, stderr); ok {
			return code
		}
	}
	ctx, stop := supervise.InterruptContext(stderr)
	defer stop()
	if len(args) == 0 {
		usage(stderr)
		return pipeline.ExitInvalid
	}
	if c, ok := lookup(args[0]); ok {
		rest := args[1:]
		if wantsHelp(rest) && c.name != "help" {
			c.help(stdout)
			return pipeline.ExitOK
		}
		if c.name == "run" {
			out := csvout.New(stdout, stderr)
			defer out.Close()
			stdout = out
		}
		return c.call(ctx, rest, stdout, stderr)
	}
	switch args[0] {
	case "-h", "--help", "-help":
		usage(stdout)
		return pipeline.ExitOK
	case "--version", "-version", "-v":
		fmt.Fprintln(stdout, versionLine())
		return pipeline.ExitOK
	}
	// `benchrun PLAN ...` is shorthand for `benchrun run PLAN ...`.
	run, _ := lookup("run")
	if wantsHelp(args) {
		run.help(stdout)
		return pipeline.ExitOK
	}
	out := csvout.New(stdout, stderr)
	defer out.Close()
	return run.call(ctx, args, out, stderr)
}

// supervised reports whether a command runs under a supervising parent
// (supervise.go, internal/supervise): runs, whose crash must never exit
// 2, and the tests' crashing commands.
func supervised(args []string) bool {
	if wantsHelp(args) {
		return false // help runs nothing
	}
	name := args[0]
	for _, c := range testCommands {
		if c.name == name {
			return true
		}
	}
	for _, c := range commands() {
		if c.name == name {
			return name == "run"
		}
	}
	switch name {
	case "--version", "-version", "-v":
		return false
	}
	return true // `benchrun PLAN`
}
