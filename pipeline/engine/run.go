package engine

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/benchrun/benchrun/internal/host"
	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/judge"
)

// Options controls a run.
type Options struct {
	// Sinks are sinks beyond the graph's (Graph.Sinks): embedders' and
	// tests' (pipelinetest.UseSink).
	Sinks []*pipeline.SinkUse
	// Stdout is where data goes (the CSV table); nil for none.
	Stdout io.Writer
	// Progress receives human progress lines (stderr).
	Progress io.Writer
	// MaxParallel bounds how many stages run at once (default 4).
	MaxParallel int
	// FinallyTimeout bounds each finally stage and cleanup after an interrupt.
	FinallyTimeout time.Duration
	// Baseline is --baseline: the runs folder a regression check reads
	// the history from (over the plan's baseline.runs; without a plan
	// baseline it turns the check on with its defaults).
	Baseline string
	// Keep leaves provisioned machines running (--keep): provision stages
	// skip their teardown and say how to run it by hand.
	Keep bool
	// Shard and Shards are --shard i/n: this process sends shard i's part
	// of every cell's load (Shards 0 or 1: all of it).
	Shard, Shards int
	// StartAt is --start-at: the run's first cell waits for this
	// instant, so the shards start together (zero: now).
	StartAt time.Time
	// Coordinator is --coordinator HOST:PORT: the shards join it and
	// start every cell together (Env.CellStart); Coordinate is
	// --coordinate ADDR: shard 0 serves it there itself.
	Coordinator, Coordinate string
	// Inconclusive is --inconclusive: "tolerate" or "fail" (InconclusiveFail),
	// over the plan's inconclusive; "" leaves the plan's.
	Inconclusive string
	// Live is the run's live view (--metrics-addr): each stage is marked
	// running on it and handed it in Env.Live; nil for none.
	Live pipeline.Live
}

// What an inconclusive verdict does to the exit code (the plan's
// inconclusive, --inconclusive).
const (
	InconclusiveTolerate = "tolerate"
	InconclusiveFail     = "fail"
)

type nodeState struct {
	node      *pipeline.Node
	status    string
	reason    string
	outputs   *pipeline.Outputs
	started   time.Time
	duration  time.Duration
	attempts  int
	released  bool
	cleanedUp bool
	// locks are the resource locks the stage holds: while it runs, and a
	// service until it is released. waitNoted: it said it waits for one.
	locks     []lockReq
	waitNoted bool
	blocker   string // what it waited for at the last scan
}

type runner struct {
	g      *pipeline.Graph
	ri     *pipeline.RunInfo
	opts   Options
	states map[string]*nodeState
	// judge judges the rows as they are emitted, and keeps what the
	// judging needs (pipeline/judge).
	judge *judge.Judge
	// historyRoot, when set, is where the baseline history is without
	// baseline.runs or --baseline (a judged run directory's, JudgeDir),
	// instead of the runs folder the run is filed under.
	historyRoot string
	locks       lockTable
	// emitMu keeps the rows and verdicts in the order they reach the
	// sinks, and the manifest's notes.
	emitMu sync.Mutex
	// judged is set once the run-level assertions and the baseline are
	// judged (judgeEnd); judgedSum is the run's outcome then, which post
	// stages post.
	judged    bool
	judgedSum *pipeline.Summary
	// postRecords are the accounts of the sinks post stages drove.
	postMu      sync.Mutex
	postRecords []pipeline.SinkRecord
	// sync is the run's link to its sibling shards (nil: not sharded).
	sync     *shardSync
	emitErr  error
	tally    cellTallies // each stage's cell rows and error rows
	manifest *rundir.Manifest
	// sinks receive the rows, durable ones first.
	sinks sinkSet
	// idle are the stages a resume has nothing left for (skipped).
	idle map[string]bool
	// stageProgress is the progress writer the stages get (redactingProgress).
	stageProgress io.Writer
	// md hashes the model file before anything is measured (nil: none).
	md *modelDigester
}

// Run executes the graph. It returns the summary; the error is non-nil only
// when the run could not be carried out at all. Once manifest.json says
// "running", every way out of Run finishes it (ok, failed or interrupted,
// with the reason), a panic included; and Run frees the run directory for
// the next writer (RunInfo.Close) when it returns.
func Run(ctx context.Context, g *pipeline.Graph, ri *pipeline.RunInfo, opts Options) (*pipeline.Summary, error) {
	defer ri.Close()
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.MaxParallel <= 0 {
		opts.MaxParallel = 4
	}
	if opts.FinallyTimeout <= 0 {
		opts.FinallyTimeout = 2 * time.Minute
	}
	// Secrets are known before anything is written, and everything the
	// run prints or logs is redacted (pipeline/engine/redact.go).
	RegisterPlanSecrets(g.Plan)
	progress, stageProgress, flushProgress := redactingProgress(opts.Progress)
	opts.Progress = progress
	defer flushProgress()
	if weak := redact.Weak(); len(weak) > 0 {
		fmt.Fprintf(progress, "benchrun: warning: a secret the plan sends is %d characters long: short enough to be guessed, and to be an ordinary word, so it is masked only where it stands alone (a key of %d or more characters is masked wherever it appears)\n", slices.Min(weak), redact.WeakLen)
	}
	defer scrubLogs(ri.Dir)
	r := &runner{g: g, ri: ri, opts: opts, states: map[string]*nodeState{}, stageProgress: stageProgress}
	for _, n := range g.Nodes {
		r.states[n.Spec.Name] = &nodeState{node: n, status: pipeline.StatusPending}
	}
	if ri.Resumed {
		// Refused before anything in the directory changes.
		r.idle = nothingLeftToResume(g, stateOf(ri).doneCells)
		if err := checkResume(g, ri, r.idle); err != nil {
			return nil, &pipeline.ExitError{Code: pipeline.ExitInvalid, Err: err}
		}
	}
	r.sinks = newSinkSet(append(g.LiveSinks(), opts.Sinks...), opts.Progress)
	r.manifest = newManifest(ri)
	r.manifest.Sinks = r.sinkRecords()
	if err := writeManifest(ri.Dir, r.manifest); err != nil {
		return nil, &pipeline.ExitError{Code: pipeline.ExitInfra, Err: err}
	}
	// Hash the model file now, while the first stages start servers;
	// every other stage waits for it (joinDigest), so it never competes
	// with a measurement.
	digestCtx, stopDigest := context.WithCancel(ctx)
	defer stopDigest()
	r.md = newModelDigester(g.Plan, opts.Progress)
	r.md.start(digestCtx)
	// From here on the manifest says running: finish it on every way out.
	finished := false
	defer func() {
		if v := recover(); v != nil {
			if !finished {
				r.finishManifest(nil, pipeline.RunFailed, fmt.Sprintf("benchrun crashed: panic: %v", v), pipeline.ExitInternal)
			}
			panic(v)
		}
	}()
	fail := func(code int, err error) (*pipeline.Summary, error) {
		finished = true
		r.finishManifest(nil, pipeline.RunFailed, err.Error(), code)
		return nil, &pipeline.ExitError{Code: code, Err: err}
	}
	if ri.Resumed {
		r.noteResume()
		// A killed attempt's spooled rows of the cell it was measuring:
		// that cell is measured again, and its spool is nobody's.
		rundir.RemoveSpools(ri.Dir)
		// Keep the plan as first written; record this attempt's resolution beside it.
		resolved, err := resolvedPlanText(g.Plan)
		if err != nil {
			return fail(pipeline.ExitInvalid, err)
		}
		if len(stateOf(ri).prevPlan) > 0 && string(stateOf(ri).prevPlan) != string(resolved) {
			if err := rundir.WriteFileAtomic(filepath.Join(ri.Dir, "plan.resumed.json"), resolved); err != nil {
				return fail(pipeline.ExitInfra, err)
			}
		}
	}
	env := &pipeline.SinkEnv{Run: ri, Stdout: opts.Stdout, Progress: opts.Progress, RateLadder: g.RateLadder(), NamedTests: g.NamedTests(), Prior: pipeline.PriorRows(ri), HistoryRoot: historyRoot(ri.Dir)}
	if err := r.sinks.start(env); err != nil {
		return fail(pipeline.ExitInfra, err)
	}

	runCtx := ctx
	if g.Plan.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, g.Plan.Timeout, fmt.Errorf("plan timeout %s exceeded", g.Plan.Timeout))
		defer cancel()
	}
	// Verdicts of cells a resume does not measure again still count, as
	// they were judged (newJudge).
	r.judge = r.newJudge()
	if ri.Resumed {
		prior, err := env.Prior()
		if err != nil {
			return fail(pipeline.ExitInfra, fmt.Errorf("reading the earlier attempts' rows: %w", err))
		}
		if prior != nil {
			r.judge.Seed(prior.Cells)
		}
	}
	var err error
	if r.sync, err = openShards(runCtx, opts, ri.ID, func(f string, a ...any) { fmt.Fprintf(opts.Progress, f+"\n", a...) }); err != nil {
		return fail(pipeline.ExitInvalid, err)
	}
	r.manifest.Shard = r.sync.Record()
	r.schedule(ctx, runCtx)
	r.sync.close(r.leaveReason())
	r.manifest.Shard = r.sync.Record()
	r.judgeEnd(ctx) // done by the scheduler already when a post stage ran after it

	sum := r.summary(ctx)
	redactSummary(sum)
	if reason := r.sinks.stop(sum); reason != "" {
		fmt.Fprintf(opts.Progress, "benchrun: %s\n", reason)
		if sum.ExitCode == pipeline.ExitOK || sum.ExitCode == pipeline.ExitAssertion {
			sum.ExitCode = pipeline.ExitInfra
			sum.Reason = reason
		}
	}
	sum.Sinks = r.sinkRecords()
	status := pipeline.RunFailed
	switch {
	case sum.Interrupted:
		status = pipeline.RunInterrupted
	case sum.ExitCode == pipeline.ExitOK:
		status = pipeline.RunOK
	}
	finished = true
	r.finishManifest(sum, status, sum.Reason, sum.ExitCode)
	return sum, nil
}

// finishManifest records how the attempt ended and rewrites manifest.json.
func (r *runner) finishManifest(sum *pipeline.Summary, status, reason string, code int) {
	if sum != nil {
		recordOutcome(r.manifest, sum)
	}
	r.manifest.Sinks = r.sinkRecords()
	if r.manifest.ModelDigest == "" && r.md != nil {
		r.manifest.ModelDigest = host.KnownDigest(r.md.file, r.md.planDir)
	}
	at := time.Now()
	if sum != nil && !sum.FinishedAt.IsZero() {
		at = sum.FinishedAt // what result.json and the reports say too
	}
	r.manifest.Finish(status, reason, code, at)
	if err := writeManifest(r.ri.Dir, r.manifest); err != nil {
		fmt.Fprintf(r.opts.Progress, "benchrun: %v\n", err)
	}
}

// noteResume tells what a resume found: the attempt it is, an attempt
// before it that crashed, temporary files a killed writer left.
func (r *runner) noteResume() {
	ri := r.ri
	fmt.Fprintf(r.opts.Progress, "benchrun: resuming run %s: attempt %d, %d cells already done\n", ri.ID, ri.Attempt, len(stateOf(ri).doneCells))
	if c := stateOf(ri).crashed; c != nil {
		who := ""
		if c.PID > 0 {
			who = fmt.Sprintf(" (pid %d on %s)", c.PID, c.Hostname)
		}
		fmt.Fprintf(r.opts.Progress, "benchrun: attempt %d%s, started %s, crashed: %s\n", c.Attempt, who, c.StartedAt.UTC().Format(time.RFC3339), c.Reason)
	}
	if n := len(stateOf(ri).removed); n > 0 {
		fmt.Fprintf(r.opts.Progress, "benchrun: removed %d temporary files a killed writer left (%s)\n", n, strings.Join(stateOf(ri).removed, ", "))
	}
}
