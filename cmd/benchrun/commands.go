package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/pipeline"
)

// command is one subcommand, declared once in the table (commands): its
// line in `benchrun help`, its usage, its flags and how many arguments it
// takes. call parses its flags, checks its arguments, and maps the error
// it returns to an exit code, the same way for every command (vegeta's
// main is the model; the errors carry their codes as k6's do).
type command struct {
	name    string
	summary string // its line in `benchrun help`
	// usage is written above the flags: on --help (on stdout), and on
	// stderr when the command line is wrong. A command without flags has
	// none: its help is "usage: benchrun SUMMARY".
	usage string
	// flags declares the command's flags on fs and returns the command
	// bound to them; nil for a command without flags, whose run takes
	// its arguments as they are.
	flags func(fs *flag.FlagSet) runFunc
	run   runFunc
	args  arity
	// sub is the word the arguments must start with (`k8s render`);
	// without it the usage line alone is said.
	sub string
	// flagsFirst: the flags come before the arguments (flag.Parse), not
	// anywhere among them.
	flagsFirst bool
	// flagErrorUsage, when set, is written above the flags after a flag
	// error instead of usage (the run's: the flag package's own head).
	flagErrorUsage string
	// prefix is what the command's errors are said after: "benchrun
	// NAME" unless set.
	prefix string
}

// runFunc is what a command does with its arguments (the flags taken
// out). Its error says how it ended (command.call): nil is exit 0, a
// *pipeline.ExitError its code, errUsage 2, any other error 3.
type runFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// arity is how many arguments a command takes (max < 0: no limit). A
// command line with another number exits 2, saying the usage and flags
// on stderr, or said's line where it is set.
type arity struct {
	min, max int
	said     func(args []string) string
}

func exactly(n int) arity { return arity{min: n, max: n} }
func atLeast(n int) arity { return arity{min: n, max: -1} }

// anyArgs takes whatever it is given.
var anyArgs = arity{max: -1}

func commands() []command {
	return []command{
		{name: "run", summary: "run PLAN [flags]          run a plan (the default: `benchrun PLAN` is `benchrun run PLAN`)",
			usage: "usage: benchrun PLAN [flags]   (benchrun run PLAN [flags] is the same)\n\nrun flags:\n", flags: runFlags, flagErrorUsage: "Usage of run:\n",
			prefix: "benchrun", // `benchrun PLAN` is its usual form
			args: arity{min: 1, max: 1, said: func(args []string) string {
				if len(args) == 0 {
					return "benchrun: no plan file given (usage: benchrun PLAN.cue [flags])"
				}
				return fmt.Sprintf("benchrun: unexpected arguments %q", args[1:])
			}}},
		{name: "vet", summary: "vet PLAN...               check plans without running anything (exit 0 clean, 2 not)",
			usage: "usage: benchrun vet PLAN... [-t key=value]\n", flags: vetFlags, args: atLeast(1)},
		{name: "graph", summary: "graph PLAN [--format F]   print the stage DAG as mermaid (default) or dot",
			usage: "usage: benchrun graph PLAN [--format mermaid|dot] [-t key=value]\n", flags: graphFlags, args: exactly(1)},
		{name: "list", summary: "list                      stage kinds and sinks with their fields", run: writeList,
			args: arity{said: func([]string) string {
				return "usage: benchrun list   (then `benchrun schema KIND` for one kind's fields)"
			}}},
		{name: "schema", summary: "schema [KIND|columns]     fields, types, defaults and docs of a kind, the plan, or row columns", run: writeSchema,
			args: arity{max: 1, said: func([]string) string { return "usage: benchrun schema [KIND | plan | columns]" }}},
		{name: "sim", summary: "sim [flags]               serve the built-in OpenAI-compatible simulator",
			usage: simUsage(), flags: simFlags, flagsFirst: true,
			args: arity{said: func(args []string) string { return "benchrun sim: unexpected arguments: " + strings.Join(args, " ") }}},
		{name: "self-bench", summary: "self-bench [flags]        measure the load generator's own ceiling on this machine",
			usage: "usage: benchrun self-bench [flags]   how much load this machine's client sustains, and how late the machine itself runs a thread\n",
			flags: selfBenchFlags, flagsFirst: true, args: anyArgs},
		{name: "report", summary: "report RUN_DIR            regenerate report.md, report.html and result.json from a run's Parquet files",
			usage: "usage: benchrun report RUN_DIR [--output PREFIX]\n", flags: reportFlags, args: exactly(1)},
		{name: "post", summary: "post RUN_DIR [flags]      send a run's results to its remote sinks again (SiYuan, webhooks); --dry-run prints them",
			usage: "usage: benchrun post RUN_DIR [--sink NAME]... [--url URL] [--dry-run]\n", flags: postFlags, args: exactly(1)},
		{name: "compare", summary: "compare OLD NEW [flags]   compare runs cell by cell (regressed, improved, same, unknown; exit 1 on a regression); 3+ variants, --html FILE",
			usage: compareUsage + "\nflags:\n", flags: compareFlags, args: atLeast(1)},
		{name: "history", summary: "history RUNS [flags]      each cell's metrics over the runs under a folder, with change points (--html FILE)",
			usage: historyUsage + "\nflags:\n", flags: historyFlags, args: exactly(1)},
		{name: "compact", summary: "compact RUNS [--dry-run]  rewrite each run's many small Parquet part files into one per table, atomically",
			usage: compactUsage + "\nflags:\n", flags: compactFlags, args: atLeast(1)},
		{name: "k8s", summary: "k8s render PLAN [flags]   Kubernetes manifests that run a plan as N shards and merge them (docs/SCALE.md)",
			usage: "usage: benchrun k8s render PLAN [-t key=value]... [--shards N] [--image IMAGE] [--namespace NS] [--start-at TIME] [--out DIR|FILE.yaml]\n",
			flags: k8sFlags, sub: "render", args: exactly(1), prefix: "benchrun k8s render"},
		{name: "coordinate", summary: "coordinate --shards N      keep a sharded run's shards in step (--coordinator HOST:PORT on each)",
			usage: "usage: benchrun coordinate --shards N [--listen ADDR]\n", flags: coordinateFlags, flagsFirst: true,
			args: arity{said: func([]string) string { return "benchrun coordinate: " + coordinateArgs }}},
		{name: "merge", summary: "merge RUN_DIR... --out DIR  join a sharded run's run directories, recomputing every cell from the pooled requests",
			usage: "usage: benchrun merge RUN_DIR... --out DIR [--baseline RUNS]\n", flags: mergeFlags, args: atLeast(1)},
		{name: "version", summary: "version                   benchrun's version and VCS revision (also --version)", run: runVersion,
			args: arity{said: func(args []string) string {
				return fmt.Sprintf("benchrun version: unexpected arguments %q (it takes none)", args)
			}}},
		{name: "help", summary: "help                      this text, with the run flags (also --help)", run: runHelp, args: anyArgs},
	}
}

// testCommands are extra subcommands the tests add (a command that
// panics, say); nil in benchrun itself.
var testCommands []command

// lookup finds the command of a name.
func lookup(name string) (command, bool) {
	for _, c := range append(commands(), testCommands...) {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// errUsage is a command line the command refuses after its flags were
// read (compare OLD without NEW): its usage and flags are said on stderr,
// exit 2.
var errUsage = errors.New("usage")

// errSaid marks a failure the command already said on stderr: only its
// exit code is left.
var errSaid = errors.New("said on stderr")

// fail is a failure with its exit code, said as "benchrun NAME: ERR".
func fail(code int, err error) error { return &pipeline.ExitError{Code: code, Err: err} }

func failf(code int, format string, a ...any) error { return fail(code, fmt.Errorf(format, a...)) }

// exitWith is an exit code the command has said why of (nil for 0).
func exitWith(code int) error {
	if code == pipeline.ExitOK {
		return nil
	}
	return fail(code, errSaid)
}

// call runs c on its command line and returns the exit code.
func (c command) call(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := c.parseAndRun(ctx, args, stdout, stderr)
	switch {
	case err == nil:
		return pipeline.ExitOK
	case errors.Is(err, errUsage):
		return pipeline.ExitInvalid
	case !errors.Is(err, errSaid):
		prefix := c.prefix
		if prefix == "" {
			prefix = "benchrun " + c.name
		}
		fmt.Fprintf(stderr, "%s: %v\n", prefix, err)
	}
	return pipeline.ExitCode(err)
}

func (c command) parseAndRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if c.sub != "" {
		if len(args) == 0 || args[0] != c.sub {
			fmt.Fprint(stderr, c.usage)
			return errUsage
		}
		args = args[1:]
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	run := c.run
	if c.flags != nil {
		run = c.flags(fs)
		fs.Usage = func() { c.writeUsage(stderr, fs, c.flagErrorUsage) }
		var err error
		if args, err = c.parse(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return errUsage
		}
		fs.Usage = func() { c.writeUsage(stderr, fs, "") }
	}
	if len(args) < c.args.min || c.args.max >= 0 && len(args) > c.args.max {
		if c.args.said != nil {
			fmt.Fprintln(stderr, c.args.said(args))
		} else {
			fs.Usage()
		}
		return errUsage
	}
	err := run(ctx, args, stdout, stderr)
	if errors.Is(err, errUsage) {
		fs.Usage()
	}
	return err
}

// parse reads the flags and returns the arguments.
func (c command) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	if c.flagsFirst {
		err := fs.Parse(args)
		return fs.Args(), err
	}
	return parseInterspersed(fs, args)
}

// writeUsage writes the usage (or, where given, another head) and the
// flags.
func (c command) writeUsage(w io.Writer, fs *flag.FlagSet, head string) {
	if head == "" {
		head = c.usage
	}
	fmt.Fprint(w, head)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// help writes a command's help: its usage and flags, or for a command
// without flags its summary.
func (c command) help(w io.Writer) {
	if c.flags == nil {
		fmt.Fprintf(w, "usage: benchrun %s\n", c.summary)
		return
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.flags(fs)
	c.writeUsage(w, fs, "")
}

// runVersion is `benchrun version`.
func runVersion(_ context.Context, _ []string, stdout, _ io.Writer) error {
	fmt.Fprintln(stdout, versionLine())
	return nil
}

// runHelp is `benchrun help`.
func runHelp(_ context.Context, _ []string, stdout, _ io.Writer) error {
	usage(stdout)
	return nil
}

// usage is the commands, then what `benchrun PLAN` takes: the run flags.
func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: benchrun PLAN [flags] | benchrun COMMAND [args] (COMMAND --help for its flags)")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %s\n", c.summary)
	}
	fmt.Fprintln(w)
	c, _ := lookup("run")
	c.help(w)
}

// simUsage is what `benchrun sim --help` says above its flags.
func simUsage() string {
	var b strings.Builder
	fmt.Fprintln(&b, "usage: benchrun sim [flags]\n\nServe an OpenAI-compatible LLM simulator (see docs/SIM.md).\n\nPresets (imply --mode engine):")
	for _, p := range sim.Presets() {
		fmt.Fprintf(&b, "  %-20s %s\n", p.Name, p.Description)
	}
	fmt.Fprintf(&b, "\nPersonalities (--as): %s\n", strings.Join(sim.Personalities(), ", "))
	fmt.Fprintln(&b, "\nPer-request faults: header X-Sim-Fault: error=500 | drop-after=N | cut-after=N | stall=3s[,stall-at=N] | malformed | slow-headers=2s\nPer-request schedule (fixed mode): header X-Sim-Timing: ttft=50ms,itl=10ms,chunk=4\n\nFlags:")
	return b.String()
}
