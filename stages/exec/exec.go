// Package exec is the `exec` stage: it runs a benchmark program
// (llama-bench, mlx_lm.benchmark, anything that prints JSON, JSON lines or
// CSV) through internal/procrun, as launch runs a server (its own process
// group under the guard, killed with it, its output in <stage>.log), and
// turns what it prints on stdout into rows that go through env.Emit like a
// sweep's cells: stamped, judged by the stage's assertions, costed, stored.
package exec

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/benchrun/benchrun/internal/procrun"
	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/remote"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/telemetry"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages/internal/program"
)

// What this kind implements, checked by the compiler.
var (
	_ pipeline.Stage  = (*Stage)(nil)
	_ pipeline.Warner = (*Stage)(nil)
)

//go:embed schema.cue
var schemaSource string

// Parsers.
const (
	parserLlamaBench = "llama-bench"
	parserMLX        = "mlx-lm"
	parserJSON       = "json"
	parserJSONL      = "jsonl"
	parserCSV        = "csv"
)

// listGPUs is NVML's GPU list; tests put go-nvml's mock behind it.
var listGPUs = telemetry.ListGPUs

// Kind registers the stage. It is measuring: it holds the GPU lock (two
// measurements never share a GPU) and may not retry (a retried
// measurement hides failures).
var Kind = pipeline.Kind{
	Name:      "exec",
	Doc:       "run a benchmark program (llama-bench, mlx-lm, or one printing JSON, JSON lines or CSV) and turn its output into rows",
	Measuring: true,
	Schema:    schema.KindSchema{Def: "#Exec", Source: program.WithSchema(schemaSource)},
	New:       New,
}

// Stage is a configured exec stage.
type Stage struct {
	spec *schema.Stage
	cfg  Config
	// prog is the GPU selection and stop grace the #Program fields give.
	prog program.Decoded
}

// NamesTests implements pipeline.TestNamer: llama-bench's and mlx-lm's
// rows are their tests (pp512, tg128@d4096, pp512+tg128/b4), which isl,
// osl and concurrency alone do not tell apart.
func (s *Stage) NamesTests() bool {
	return s.cfg.Parser == parserLlamaBench || s.cfg.Parser == parserMLX
}

var _ pipeline.TestNamer = (*Stage)(nil)

// maxStdout bounds the stdout kept for parsing (the log has all of it): a
// program that floods stdout must not take benchrun's memory with it.
const maxStdout = 64 << 20

// Validate checks the configuration without side effects: the command,
// the GPU names, and the fields mapping (generic parsers only; every
// target a column a program may fill, with a guess for a typo).
func (s *Stage) Validate(c *pipeline.Check) error {
	var errs schema.Errors
	name := s.spec.Name
	errs = append(errs, s.cfg.Config.Check(s.spec, s.prog)...)
	generic := s.cfg.Parser == parserJSON || s.cfg.Parser == parserJSONL || s.cfg.Parser == parserCSV
	if len(s.cfg.Fields) > 0 && !generic {
		errs = append(errs, schema.Error{Pos: s.spec.PosOf("fields"), Msg: fmt.Sprintf("stages.%s.fields: the %s parser maps the program's fields itself; fields is for the json, jsonl and csv parsers", name, s.cfg.Parser)})
	}
	if generic {
		keys := make([]string, 0, len(s.cfg.Fields))
		for k := range s.cfg.Fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		by := map[string]string{}
		for _, k := range keys {
			col := s.cfg.Fields[k]
			pos := s.spec.PosOf("fields", k)
			if why := checkColumn(col); why != "" {
				errs = append(errs, schema.Error{Pos: pos, Msg: fmt.Sprintf("stages.%s.fields.%s: %s", name, k, why)})
				continue
			}
			if other, dup := by[col]; dup {
				errs = append(errs, schema.Error{Pos: pos, Msg: fmt.Sprintf("stages.%s.fields.%s: %s is mapped to %s already: one field per column", name, k, other, col)})
			}
			by[col] = k
		}
	}
	errs = append(errs, s.validateOn(c)...)
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// Warnings says what makes a plan run but measure nothing: llama-bench
// prints a markdown table unless told -o json or -o jsonl.
func (s *Stage) Warnings(c *pipeline.Check) []schema.Error {
	if s.cfg.Parser != parserLlamaBench || len(s.cfg.Cmd) == 0 || !strings.Contains(filepath.Base(s.cfg.Cmd[0]), "llama-bench") {
		return nil
	}
	words := s.cfg.Cmd
	if s.cfg.Shell {
		words = strings.Fields(strings.Join(s.cfg.Cmd, " "))
	}
	for i, w := range words {
		if (w == "-o" || w == "--output") && i+1 < len(words) && (words[i+1] == "json" || words[i+1] == "jsonl") {
			return nil
		}
	}
	return []schema.Error{{Pos: s.spec.PosOf("cmd"), Msg: fmt.Sprintf("stages.%s.cmd: llama-bench prints a markdown table unless given -o json or -o jsonl, which the llama-bench parser reads: add \"-o\", \"jsonl\"", s.spec.Name)}}
}

// Run runs the program to its end and emits its rows. A failure of the
// program (not installed, a non-zero exit, nothing parseable) is an
// `error` row with the reason and the output's tail, and the stage ends
// with status error by the pipeline's rule for error rows; rows the
// program finished before it failed are emitted first. A timeout kills
// the process group, emits the error row and fails the stage; an
// interrupt kills it and emits nothing more.
func (s *Stage) Run(ctx context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	name := env.Stage.Name
	vars := s.vars(env)
	argv := make([]string, len(s.cfg.Cmd))
	for i, a := range s.cfg.Cmd {
		argv[i] = pipeline.Expand(a, vars)
	}
	onMachine := s.cfg.On != ""
	if onMachine {
		// "benchrun" stays the machine's: this binary's path means nothing there.
		argv = remoteCommandLine(argv, s.cfg.Shell)
	} else {
		argv = procrun.CommandLine(argv, s.cfg.Shell)
	}
	environ, err := s.environ(env, vars, onMachine)
	if err != nil {
		return nil, err
	}
	dir := s.workDir(env, vars, onMachine)
	logPath := filepath.Join(env.Dir, name+".log")
	// stdout goes to the log (for the tail a failure shows) and to the
	// parser; stderr to the log only.
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", logPath, err)
	}
	defer logf.Close()
	stdout := &capped{max: maxStdout}
	var runErr error
	var machine string // where it ran, with on:
	var started time.Time
	if onMachine {
		c, err := s.connect(ctx, env)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		machine = c.Machine().String()
		started = time.Now().UTC()
		fmt.Fprintf(env.Progress, "%s: running %s on %s\n", name, redact.String(strings.Join(argv, " ")), machine)
		runErr = s.runOn(ctx, c, argv, program.RemoteEnv(environ), dir, io.MultiWriter(stdout, logf), logf)
	} else {
		spec := procrun.Spec{
			Argv: argv, Env: append(os.Environ(), environ...), Dir: dir, LogPath: logPath,
			Stdout: io.MultiWriter(stdout, logf),
			Name:   name, Noun: "program", Progress: env.Progress,
			Graces: procrun.Graces{Int: s.prog.StopGrace, Term: s.prog.StopGrace, IntName: "stop_grace", TermName: "stop_grace"},
		}
		started = time.Now().UTC()
		fmt.Fprintf(env.Progress, "%s: running %s\n", name, strings.Join(argv, " "))
		runErr = procrun.Run(ctx, spec, 0)
	}
	out := stdout.Bytes()

	base := results.Cell{Stage: name, Program: s.cfg.Parser, StartedAt: started, Model: s.modelName(env), Engine: s.engineName(argv), EngineVersion: "unknown"}
	price := s.price(env)
	fail := func(reason string) error {
		row := base
		row.CellID = name + "/run"
		// One line on the row (its first, and the log's last line when a
		// tail follows): twenty lines of a program's usage belong in
		// its log, not in every table and CSV.
		row.Status, row.Reason = results.StatusError, pipeline.OneLine(reason)
		return env.Emit(row, nil)
	}
	var timeout *pipeline.TimeoutError
	switch {
	case runErr == nil:
	case onMachine && remote.ExitCode(runErr) == 127 && ctx.Err() == nil:
		// The shell on the machine found no such program.
		return &pipeline.Outputs{}, fail(procrun.Failed(fmt.Errorf("%s is not installed on %s (exit status 127: not found in PATH there)", argv[0], machine), logPath).Error())
	case !onMachine && notStarted(runErr) && ctx.Err() == nil:
		if _, err := osexec.LookPath(argv[0]); err != nil {
			return &pipeline.Outputs{}, fail(fmt.Sprintf("%s is not installed (not found in PATH): %v", argv[0], runErr))
		}
		return &pipeline.Outputs{}, fail(fmt.Sprintf("%s could not start: %v", argv[0], runErr))
	case errors.As(runErr, &timeout):
		// Killed at the stage's timeout: say so in a row, then fail the
		// stage as a timeout does. What it finished before is kept.
		s.emitRows(context.WithoutCancel(ctx), env, base, price, out)
		reason := fmt.Sprintf("%s: %v", argv[0], runErr)
		if onMachine {
			// procrun's errors carry the log's tail; the machine's do not.
			reason = procrun.Failed(runErr, logPath).Error()
		}
		if err := fail(reason); err != nil {
			return nil, err
		}
		return nil, runErr
	case ctx.Err() != nil:
		return nil, runErr // interrupted: the process group is gone; nothing more to say
	}
	n, perr := s.emitRows(ctx, env, base, price, out)
	if perr != nil && !errors.Is(perr, errParse) {
		return nil, perr // a sink could not store a row
	}
	switch {
	case runErr != nil && onMachine:
		// procrun's errors carry the log's tail; the machine's do not.
		return &pipeline.Outputs{}, fail(fmt.Sprintf("%s failed: %v", argv[0], procrun.Failed(runErr, logPath)))
	case runErr != nil:
		return &pipeline.Outputs{}, fail(fmt.Sprintf("%s failed: %v", argv[0], runErr))
	case perr != nil:
		what := "nothing parseable"
		if n > 0 {
			what = fmt.Sprintf("%d rows, then output it could not parse", n)
		}
		return &pipeline.Outputs{}, fail(procrun.Failed(fmt.Errorf("%s printed %s as %s output: %w", argv[0], what, s.cfg.Parser, errors.Unwrap(perr)), logPath).Error())
	}
	fmt.Fprintf(env.Progress, "%s: %d rows\n", name, n)
	return &pipeline.Outputs{Values: map[string]any{"rows": n, "log": logPath}}, nil
}

// environ is the plan's part of the environment (gpus, env): all a
// program on the machine gets added to its login environment, since
// benchrun's own (its keys, tokens) is no business of the machine's.
func (s *Stage) environ(env *pipeline.Env, vars map[string]string, onMachine bool) ([]string, error) {
	var environ []string
	switch {
	case len(s.prog.GPUs) > 0 && onMachine:
		// By index only (vet): NVML here does not know the machine's GPUs.
		environ = append(environ, telemetry.CUDADevicesEnv(s.prog.GPUs)...)
	case len(s.prog.GPUs) > 0:
		devices, err := s.chooseGPUs(env.Log)
		if err != nil {
			return nil, err
		}
		environ = append(environ, telemetry.CUDADevicesEnv(devices)...)
	}
	envKeys := make([]string, 0, len(s.cfg.Env))
	for k := range s.cfg.Env {
		envKeys = append(envKeys, k)
	}
	sort.Strings(envKeys)
	for _, k := range envKeys {
		v, err := pipeline.ExpandEnv(s.cfg.Env[k], vars)
		if err != nil {
			return nil, fmt.Errorf("stages.%s.env.%s: %w", env.Stage.Name, k, err)
		}
		environ = append(environ, k+"="+v)
	}
	return environ, nil
}

// workDir is where the program runs: the run's directory unless dir says
// otherwise (relative to the plan's directory here, to the login
// directory on a machine).
func (s *Stage) workDir(env *pipeline.Env, vars map[string]string, onMachine bool) string {
	dir := env.Dir
	switch {
	case onMachine:
		// On the machine, relative to the login directory (the default).
		dir = pipeline.Expand(s.cfg.Dir, vars)
	case s.cfg.Dir != "":
		dir = pipeline.Expand(s.cfg.Dir, vars)
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(vars["plan_dir"], dir)
		}
	}
	return dir
}

// price is the hourly cost the rows carry: with on:, the machine it ran
// on is what it cost, whatever else it needs.
func (s *Stage) price(env *pipeline.Env) *float64 {
	if s.cfg.On == "" {
		return costPerHour(env)
	}
	if d := env.Deps[s.cfg.On]; d != nil && d.CostPerHour != nil {
		p := *d.CostPerHour
		return &p
	}
	return nil
}

// errParse marks emitRows' parse failures (as opposed to a sink's).
var errParse = errors.New("parse")

type parseError struct{ err error }

func (e parseError) Error() string        { return e.err.Error() }
func (e parseError) Unwrap() error        { return e.err }
func (e parseError) Is(target error) bool { return target == errParse }

// notStarted reports whether the run failed before the program started:
// neither an exit status nor a stop's cause (a timeout) is in the error.
func notStarted(err error) bool {
	var exit *osexec.ExitError
	var timeout *pipeline.TimeoutError
	return !errors.As(err, &exit) && !errors.As(err, &timeout) && !errors.Is(err, procrun.ErrTimeout)
}

// emitRows parses out and emits its rows in order; it returns how many it
// emitted and the parse's error (a parseError) or a sink's.
func (s *Stage) emitRows(ctx context.Context, env *pipeline.Env, base results.Cell, price *float64, out []byte) (int, error) {
	recs, perr := parse(s.cfg.Parser, out, s.cfg.Fields)
	n := 0
	for _, r := range recs {
		// An interrupt stops the storing too (the rows stored so far
		// stay): thousands of records never hold a Ctrl-C up.
		if ctx.Err() != nil {
			return n, fmt.Errorf("interrupted after storing %d of %d records: %w", n, len(recs), context.Cause(ctx))
		}
		row := s.row(base, r, price)
		reqs := r.reqs
		for i := range reqs {
			reqs[i].Stage, reqs[i].CellID = row.Stage, row.CellID
			if reqs[i].SentAt.IsZero() {
				reqs[i].SentAt = row.StartedAt
			}
		}
		if err := env.Emit(row, results.AsRequests(reqs)); err != nil {
			return n, fmt.Errorf("storing %s: %w", row.CellID, err)
		}
		n++
	}
	if perr != nil || len(recs) == 0 {
		if perr == nil {
			perr = errors.New("no rows")
		}
		return n, parseError{perr}
	}
	return n, nil
}

// parse runs the stage's parser.
func parse(parser string, out []byte, fields map[string]string) ([]record, error) {
	switch parser {
	case parserLlamaBench:
		return parseLlamaBench(out)
	case parserMLX:
		return parseMLX(out)
	default:
		return parseGeneric(parser, out, fields)
	}
}

// row completes a parsed record with the stage's identity and the cost.
func (s *Stage) row(base results.Cell, r record, price *float64) results.Cell {
	c := r.cell
	c.Stage = base.Stage
	c.CellID = base.Stage + "/" + r.id
	if c.Program == "" {
		c.Program = base.Program
	}
	if c.StartedAt.IsZero() {
		c.StartedAt = base.StartedAt
	}
	if c.Model == "" {
		c.Model = base.Model
		if c.Model == "" && r.modelFile != "" {
			c.Model = strings.TrimSuffix(filepath.Base(r.modelFile), ".gguf")
		}
	}
	if c.Engine == "" {
		c.Engine = base.Engine
	}
	if c.EngineVersion == "" {
		c.EngineVersion = base.EngineVersion
	}
	if c.Status == "" {
		c.Status = results.StatusOK
	}
	// Nothing measured is never green: a record that fills no metric
	// (`{}`, `null`, a record of only names) is an error row.
	if c.Status == results.StatusOK && !measuredSomething(&c) {
		c.Status = results.StatusError
		c.Reason = fmt.Sprintf("the %s record %q measured nothing: no metric column has a value (map the program's fields with `fields`)", c.Program, r.id)
	}
	applyCost(&c, r.reqs, price)
	return c
}

// applyCost fills the cost columns when a stage this one needs carries the
// machine's price (Outputs.CostPerHour: a provision stage's, or a launch
// stage's on it), as results.Charge defines them: the output tokens are
// the repetitions' when there are some, else the row's throughput over
// its window. A row is charged for its window whatever its status, as
// a sweep's is: the machine's time was spent.
func applyCost(row *results.Cell, reqs []results.Request, perHour *float64) {
	var out int64
	for _, r := range reqs {
		out += r.OutputTokens
	}
	tokens := float64(out)
	if len(reqs) == 0 {
		tokens = results.WindowTokens(row)
	}
	results.Charge(row, perHour, tokens)
}

// costPerHour is the first price among the stages this one depends on, in
// name order (the same every run).
func costPerHour(env *pipeline.Env) *float64 {
	names := make([]string, 0, len(env.Deps))
	for n := range env.Deps {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if d := env.Deps[n]; d != nil && d.CostPerHour != nil {
			p := *d.CostPerHour
			return &p
		}
	}
	return nil
}

func (s *Stage) modelName(env *pipeline.Env) string {
	if s.cfg.Model != "" {
		return s.cfg.Model
	}
	return env.Plan.Model.Name
}

// engineName is the engine column: the program family's (llama.cpp,
// mlx-lm), else the program's name; a generic program's own engine field
// mapped to the column wins.
func (s *Stage) engineName(argv []string) string {
	switch {
	case s.cfg.Parser == parserLlamaBench:
		return "llama.cpp"
	case s.cfg.Parser == parserMLX:
		return "mlx-lm"
	case len(argv) > 0:
		return filepath.Base(s.cfg.Cmd[0])
	}
	return ""
}

// vars are what ${...} expands to in cmd, env and dir: a program's
// (program.Vars), no port (a program is not a server).
func (s *Stage) vars(env *pipeline.Env) map[string]string {
	return program.Vars(env, env.Stage.Name, s.modelName(env))
}

// chooseGPUs resolves the plan's GPU selection as launch does: by UUID
// when NVML names them, else by NVML index (said in the stage log).
func (s *Stage) chooseGPUs(log io.Writer) ([]string, error) {
	devices, err := telemetry.ChooseDevices(s.prog.GPUs, listGPUs, log)
	if err != nil {
		return nil, fmt.Errorf("stages.%s.gpus: %w", s.spec.Name, err)
	}
	return devices, nil
}

// capped keeps the first max bytes written to it and drops the rest (the
// log keeps everything), so a flood of output cannot exhaust memory.
type capped struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf.Bytes())
}
