// Package pipeline turns a loaded plan into a DAG of stages and runs it:
// scheduling, service lifetimes, timeouts, finally stages, assertions,
// the run directory and exit codes. It knows stage kinds and outputs only
// through the Registry; it imports no stage or sink.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/remote"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/schema"
)

// Kind describes one stage kind. Registering a Kind is all it takes for
// plans, vet, `benchrun list` and `benchrun schema` to know it.
type Kind struct {
	Name string
	// Doc is one line for `benchrun list`.
	Doc string
	// Measuring stages produce measurements: they hold a resource lock
	// (by default "gpu") while they run and may not retry.
	Measuring bool
	// AfterRun stages run once every other stage has ended and the run
	// has been judged (row, stage, run and regression verdicts), so what
	// they see is the whole run (post); no other stage may depend on one.
	AfterRun bool
	// Schema is the kind's CUE definition, checked against every stage of the kind.
	Schema schema.KindSchema
	// New decodes a stage's configuration. It must not perform I/O.
	New func(s *schema.Stage) (Stage, error)
}

// Stage is one configured stage.
type Stage interface {
	// Validate checks the configuration against the plan and the other
	// decoded stages (c.Peer, c.Dependents: the contracts of contracts.go):
	// fast, no I/O, used by vet. Build calls it once every stage is
	// decoded. Problems carry plan positions (schema.Errors).
	Validate(c *Check) error
	// Run does the stage's work. A service (launch) returns once it is up,
	// with Outputs.Done set; it is stopped by Cleanup.
	Run(ctx context.Context, env *Env) (*Outputs, error)
}

// Cleaner is implemented by stages holding resources past Run (servers,
// machines). Cleanup follows every Run, on every path: after each failed
// attempt of a retried stage (before the next attempt), and once after the
// last attempt (a service's when its last dependent ends). It may thus be
// called more than once on one Stage and must be idempotent: a second call
// with nothing left to release does nothing and returns nil.
type Cleaner interface {
	Cleanup(ctx context.Context) error
}

// Env is what a running stage sees.
type Env struct {
	Stage *schema.Stage
	Plan  *schema.Plan
	RunID string
	// Dir is the run directory (logs go there).
	Dir string
	// Deps holds the outputs of every stage this one depends on, by name.
	Deps map[string]*Outputs
	// Log is the stage's own log file (<stage>.log in the run directory).
	Log io.Writer
	// Progress is for human progress lines (stderr; may be io.Discard).
	Progress io.Writer
	// Emit hands finished rows to assertions and outputs. It returns an
	// error only when the rows could not be stored.
	Emit func(cell results.Cell, reqs results.Requests) error
	// EmitSamples hands telemetry sample rows (GPU, server metrics) to the
	// outputs that take them.
	EmitSamples func(rows []results.Sample) error
	// Keep is --keep: leave provisioned machines running.
	Keep bool
	// Graph is the graph being run: Peer and Dependents read the plan's
	// decoded stages through it. When nil they find the graph Build made
	// for Stage.
	Graph *Graph

	// Runtime is the run engine's side of a run (nil outside one): what
	// Confirm, Post, StageRows, CellDone, CellStart and Shard answer.
	Runtime Runtime
	// Live is the run's live view for outside watchers (--metrics-addr);
	// nil: none.
	Live Live
}

// Runtime is what the run engine (pipeline/engine) answers a stage with
// through Env: kinds call Env's methods, never the engine.
type Runtime interface {
	// Confirm says whether the cell of row should be measured once more
	// (Env.Confirm).
	Confirm(row results.Cell) bool
	// Post drives the plan's named sinks from the run directory (Env.Post).
	Post(ctx context.Context, sinks []string) error
	// StageRows are the current rows of the named stage (Env.StageRows).
	StageRows(stage string) []results.Cell
	// CellDone says the cell finished ok in the run being resumed.
	CellDone(cellID string) bool
	// CellStart is when the cell named "stage/cell" starts on every
	// shard (Env.CellStart).
	CellStart(ctx context.Context, cell string) (time.Time, error)
	// Shard is --shard i/n and --start-at (Env.Shard).
	Shard() (i, n int, startAt time.Time)
}

// Post drives the plan's sinks named sinks (a post stage's) from the run
// directory, as `benchrun post` does later: every row stored so far, the
// verdicts, and the run's outcome as judged (failed and interrupted runs
// included). Every named sink runs; the error is the first required
// sink's failure (an optional one's is a warning).
func (e *Env) Post(ctx context.Context, sinks []string) error {
	if e == nil || e.Runtime == nil {
		return errors.New("posting needs a run: this stage was not started by the pipeline")
	}
	return e.Runtime.Post(ctx, sinks)
}

// Target resolves the stage's `target`: a launch stage's outputs, or a URL.
func (e *Env) Target() (*Outputs, error) {
	t := e.Stage.Target
	if t == "" {
		return nil, fmt.Errorf("stage %s has no target", e.Stage.Name)
	}
	if out, ok := e.Deps[t]; ok {
		return out, nil
	}
	if isURL(t) {
		return &Outputs{URL: t}, nil
	}
	return nil, fmt.Errorf("target %q is neither a stage this one depends on nor a URL", t)
}

// ModelName is the served model name a stage should use: its own `model`
// field when the kind has one, else the target's, else the plan's.
func (e *Env) ModelName(own string) string {
	if own != "" {
		return own
	}
	if out, ok := e.Deps[e.Stage.Target]; ok && out.Model != "" {
		return out.Model
	}
	return e.Plan.Model.Name
}

// Outputs is what a stage hands to the stages after it.
type Outputs struct {
	// URL is a server's base URL (http://host:port).
	URL string
	// Model is the served model name, when the stage knows it.
	Model string
	// Engine names the server software ("sim", "vllm", ...).
	Engine string
	// EngineVersion is the server software's version when the stage could
	// learn it without asking the server (a launched command's --version);
	// "" when unknown. Measuring stages ask the server too and prefer its
	// answer.
	EngineVersion string
	// PID of a launched process.
	PID int
	// Done is closed when a service stops on its own (it died); nil for
	// stages that are not services. DoneReason says why.
	Done       <-chan struct{}
	DoneReason func() string
	// Restart, when set, restarts a service between measured cells (a
	// launch stage with restart: per_cell); measuring stages call it before
	// each cell × ladder point, every time, with that cell's server
	// variables (a sweep cell's `server: {np: "4"}`; nil or empty when the
	// cell gives none). The service expands ${cell.KEY} in its command and
	// environment from vars, so cells can change server flags; a ${cell.KEY}
	// missing from vars is an error naming the variable, and the server is
	// left as it was. Restart returns once the new server is ready.
	Restart func(ctx context.Context, vars map[string]string) error
	// StartupS, when set, is the start-up of the service's latest start,
	// in seconds: from its process's start to its first passing readiness
	// check (a launch stage measures every start). It returns nil while
	// that is not known. A measuring stage that called Restart stamps it
	// on the rows of the cell it measures right after (startup_s).
	StartupS func() *float64
	// LogPath is the server's own log (a launch stage's <stage>.log),
	// whose tail a stage waiting for the server shows when it gives up;
	// "" when there is none.
	LogPath string
	// MetricsURL is where the server's Prometheus metrics are; "" when
	// unknown.
	MetricsURL string
	// GPUs are the devices the server was given, by UUID when NVML
	// resolved them (else by index, as the plan named them); nil when the
	// server was not restricted to some (GPU telemetry then reads every
	// device).
	GPUs []string
	// CostPerHour is the price of the machine the server runs on, in
	// dollars per hour (a provision stage's cost_per_hour, passed on by
	// the launch stage on it); nil when unknown, which is not free.
	CostPerHour *float64
	// SSH is the machine the stage gives for other stages to run on (on:
	// "<stage>"): a provision stage with an ssh: block fills it, launch and
	// exec stages with on: connect to it. Nil when the stage gives no
	// machine (an SSHProvider says at vet time whether it will).
	SSH *SSHMachine
	// Values are free outputs for plan authors: `when` expressions read
	// them as stages.NAME.outputs.KEY, a launch stage's strings as
	// ${NAME.KEY}. A kind does not learn facts from another kind's Values:
	// what one kind needs from another is a typed field above.
	Values map[string]any
}

// SSHMachine is where a stage with on: connects and how it logs in, as the
// providing stage learned it (remote.SSH has the fields).
type SSHMachine = remote.SSH

// Registry lists the stage kinds a run may use.
type Registry struct {
	kinds map[string]Kind
	sinks map[string]SinkKind
	// sinkOrder is the order sink kinds were registered in: the order
	// default sinks receive rows (after the durable ones).
	sinkOrder []string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{kinds: map[string]Kind{}} }

// AddKind registers a stage kind; registering a name twice is a programming error.
func (r *Registry) AddKind(k Kind) {
	if _, dup := r.kinds[k.Name]; dup {
		panic("pipeline: stage kind registered twice: " + k.Name)
	}
	r.kinds[k.Name] = k
}

// Kind returns a registered kind.
func (r *Registry) Kind(name string) (Kind, bool) {
	k, ok := r.kinds[name]
	return k, ok
}

// Kinds returns every registered kind, sorted by name.
func (r *Registry) Kinds() []Kind {
	var out []Kind
	for _, k := range r.kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Schemas returns the kinds' CUE fragments for schema.Load.
func (r *Registry) Schemas() []schema.KindSchema {
	var out []schema.KindSchema
	for _, k := range r.Kinds() {
		s := k.Schema
		s.Kind = k.Name
		out = append(out, s)
	}
	return out
}

// CellDone reports whether the cell with this id already finished with
// status ok in the run being resumed (--resume RUN_DIR), so that a
// measuring stage can skip it. It is false when not resuming, and safe on
// a nil Env.
func (e *Env) CellDone(cellID string) bool {
	if e == nil || e.Runtime == nil {
		return false
	}
	return e.Runtime.CellDone(cellID)
}

// PlannedStep is one unit of work a stage will do, for `--dry-run`: a
// sweep's cell × ladder point, in the order it will run.
type PlannedStep struct {
	// ID is the deterministic cell id (what --resume matches).
	ID string
	// Label names the step for people ("128:128 c=4").
	Label string
	// Requests is how many requests the step sends, warm-up included.
	Requests int
	// Estimate is a rough duration; 0 when the stage cannot tell.
	Estimate time.Duration
	// Concurrency and Rate are the step's load (a closed loop's sessions,
	// an open loop's requests per second; 0 when not that kind), which
	// the dry run holds against what this machine's client was measured
	// to carry (benchrun self-bench).
	Concurrency int
	Rate        float64
}

// Planner is implemented by stages that can list their work in advance
// (sweeps); `benchrun PLAN --dry-run` prints the steps and their estimate.
// It must be fast and free of side effects, like Validate.
type Planner interface {
	Plan() []PlannedStep
}

// ServerSpeed is what a service stage knows, before it runs, of how fast
// its server answers: the built-in simulator's fixed TTFT and gap between
// tokens, from its command line. Zero fields are not known.
type ServerSpeed struct {
	TTFT, ITL time.Duration
}

// SpeedHinter is a service stage that may know its server's speed before
// it runs (ok false when it does not: a real engine).
type SpeedHinter interface {
	ServerSpeed() (ServerSpeed, bool)
}

// HintedPlanner is a Planner that plans with its target's speed when the
// target knows it (a dry run of a plan against the simulator estimated
// 2.5-4x the real time from a guessed modest server).
type HintedPlanner interface {
	PlanWith(speed ServerSpeed) []PlannedStep
}

// LoadOptions returns the schema.Options for loading plans with this
// registry's stage and sink kinds.
func (r *Registry) LoadOptions(tags []string) schema.Options {
	return schema.Options{Tags: tags, Kinds: r.Schemas(), Sinks: r.SinkSchemas()}
}

// CellVarRefs returns the names KEY of the ${cell.KEY} references in s, in
// order of appearance, each once: the server variables a launch stage's
// command or environment takes from the cell being measured.
func CellVarRefs(s string) []string {
	var out []string
	seen := map[string]bool{}
	os.Expand(s, func(k string) string {
		if name, ok := strings.CutPrefix(k, "cell."); ok && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
		return ""
	})
	return out
}

// Shard is this process's shard of the load, i of n (0 of 1 when the run
// is not sharded), and the instant the shards start at (zero: now).
func (e *Env) Shard() (i, n int, startAt time.Time) {
	if e.Runtime == nil {
		return 0, 1, time.Time{}
	}
	i, n, startAt = e.Runtime.Shard()
	if n <= 1 {
		return 0, 1, startAt
	}
	return i, n, startAt
}

// CellStart is the instant this stage's named cell starts on every shard
// of a sharded run, on this machine's clock: with a coordinator, once
// every shard has arrived at this cell (so cells go in lockstep); with
// --start-at alone, that instant for the run's first cell. Zero: start
// now (not sharded, or a later cell without a coordinator). A shard
// that skips a cell still calls it, so that its peers are not kept
// waiting; an error means a peer is gone and the cells can no longer be
// kept in step.
func (e *Env) CellStart(ctx context.Context, cell string) (time.Time, error) {
	if e == nil || e.Runtime == nil {
		return time.Time{}, nil
	}
	return e.Runtime.CellStart(ctx, e.Stage.Name+"/"+cell)
}
