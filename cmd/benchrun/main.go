// Command benchrun runs LLM-serving benchmarks from CUE plan files.
//
// stdout carries data (CSV rows); stderr carries everything meant for people.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(benchrunMain(os.Args[1:], os.Stdout, os.Stderr))
}

// command is one subcommand: it gets its own arguments and returns an exit code.
type command struct {
	name  string
	usage string
	run   func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"run", "run PLAN [flags]          run a plan (the default: `benchrun PLAN` is `benchrun run PLAN`)", runRun},
		{"vet", "vet PLAN...               check plans without running anything (exit 0 clean, 2 not)", runVet},
		{"graph", "graph PLAN [--format F]   print the stage DAG as mermaid (default) or dot", runGraph},
		{"list", "list                      stage kinds and sinks with their fields", runList},
		{"schema", "schema [KIND|columns]     fields, types, defaults and docs of a kind, the plan, or row columns", runSchema},
		{"sim", "sim [flags]               serve the built-in OpenAI-compatible simulator", runSim},
		{"self-bench", "self-bench [flags]        measure the load generator's own ceiling on this machine", runSelfBench},
		{"report", "report RUN_DIR            regenerate report.md, report.html and result.json from a run's Parquet files", runReport},
		{"help", "help                      this text", nil},
	}
}

func benchrunMain(args []string, stdout, stderr io.Writer) int {
	ctx, stop := interruptContext()
	defer stop()
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name, rest := args[0], args[1:]
	for _, c := range commands() {
		if c.name == name {
			if c.run == nil {
				usage(stdout)
				return 0
			}
			return c.run(ctx, rest, stdout, stderr)
		}
	}
	switch name {
	case "-h", "--help", "-help":
		usage(stdout)
		return 0
	}
	// `benchrun PLAN ...` is shorthand for `benchrun run PLAN ...`.
	return runRun(ctx, args, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: benchrun PLAN [flags] | benchrun COMMAND [args]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %s\n", c.usage)
	}
}

// interruptContext returns a context cancelled by the first SIGINT or
// SIGTERM: the pipeline stops starting work, cancels running stages, runs
// finally stages and outputs, stops every launched server and exits 130.
// A second signal SIGKILLs the process group of every child (launched
// servers run in their own groups) and exits 130 at once; launched servers
// also carry a parent-death signal, so nothing outlives benchrun.
func interruptContext() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(&interruptError{sig: s})
		case <-done:
			return
		}
		select {
		case <-ch:
			fmt.Fprintln(os.Stderr, "benchrun: second interrupt: killing child process groups and exiting now")
			killChildGroups()
			forceExit(130)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// forceExit is a variable so that the hard exit path is visible in one place.
var forceExit = os.Exit

type interruptError struct{ sig os.Signal }

// Error names the signal as people know it ("interrupted by SIGINT"), not
// as Go spells it ("interrupt", "terminated").
func (e *interruptError) Error() string {
	switch e.sig {
	case os.Interrupt:
		return "interrupted by SIGINT"
	case syscall.SIGTERM:
		return "interrupted by SIGTERM"
	}
	return "interrupted by " + e.sig.String()
}
