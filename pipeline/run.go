package pipeline

import (
	"context"
	"errors"
	"fmt"
	"github.com/benchrun/benchrun/internal/procrun"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/regress"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/safetext"
	"github.com/benchrun/benchrun/schema"
)

// Stage statuses.
const (
	StatusPending = "pending"
	StatusRunning = "running"
	StatusUp      = "up" // a service whose Run returned; it serves until released
	StatusOK      = "ok"
	StatusFailed  = "failed"
	StatusSkipped = "skipped"
	// StatusError (cellerrors.go): the stage ended, some of its cells are error.
)

// Options controls a run.
type Options struct {
	// Sinks are sinks beyond the graph's (Graph.Sinks): embedders' and
	// tests' (UseSink).
	Sinks []*SinkUse
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
}

// What an inconclusive verdict does to the exit code (the plan's
// inconclusive, --inconclusive).
const (
	InconclusiveTolerate = "tolerate"
	InconclusiveFail     = "fail"
)

// StageResult is one stage's outcome, for the summary and the manifest.
type StageResult struct {
	Name      string  `json:"name"`
	Kind      string  `json:"kind"`
	Status    string  `json:"status"`
	Reason    string  `json:"reason,omitempty"`
	DurationS float64 `json:"duration_s"`
	Attempts  int     `json:"attempts,omitempty"`
}

// Summary is how a run ended.
type Summary struct {
	Run      *RunInfo
	Stages   []StageResult
	Cells    int
	Verdicts []Verdict
	Failed   []Verdict
	// Inconclusive are the checks that did not hold while the machine's
	// own lateness could explain it (docs/PLANS.md, "Inconclusive
	// verdicts"): they fail the run (exit 5) only under inconclusive:
	// "fail".
	Inconclusive []Verdict
	Interrupted  bool
	ExitCode     int
	// Reason says why the run did not end ok ("" when it did).
	Reason string
	// Sinks are the sinks' accounts (as the manifest records them).
	Sinks []SinkRecord
	// FinishedAt is when the run ended (the manifest's finished_at).
	FinishedAt time.Time
	// Status overrides the run status derived from the exit code (a
	// replay of a run that crashed); "" derives it.
	Status string
	// EarlierFailed counts the verdicts in Failed that earlier attempts
	// judged, on cells this resume did not measure again.
	EarlierFailed int
}

// ServiceDiedError cancels the stages using a service that stopped on its own.
type ServiceDiedError struct {
	Service string
	Reason  string
}

func (e *ServiceDiedError) Error() string {
	// "server died", with the stage named unless it is "server" itself
	// (which read "server server died").
	if e.Service == "server" || e.Service == "" {
		return "server died: " + e.Reason
	}
	return fmt.Sprintf("server %s died: %s", e.Service, e.Reason)
}

// TimeoutError is the cause of a stage's cancellation when its timeout passes.
type TimeoutError struct {
	Stage   string
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("stage %s timed out after %s (timeout in the plan): cancelled, its processes killed", e.Stage, e.Timeout)
}

// notStartedError ends a stage whose run was cancelled while it waited
// for its locks.
type notStartedError struct{ cause error }

func (e *notStartedError) Error() string { return "not started: " + e.cause.Error() }

type nodeState struct {
	node      *Node
	status    string
	reason    string
	outputs   *Outputs
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
	g       *Graph
	ri      *RunInfo
	opts    Options
	states  map[string]*nodeState
	asserts map[string][]*Assertion // by stage: row and stage level
	// runAsserts are the run-level assertions, judged once every stage ended.
	runAsserts []*Assertion
	// rows are each stage's current cell rows, for stage- and run-level assertions.
	rows map[string][]results.Cell
	// stageJudged are the stages whose stage-level assertions were judged
	// (once each; under emitMu).
	stageJudged map[string]bool
	// baseCells are the baseline history's newest ok row of each cell
	// (for `baseline.COLUMN`).
	baseCells map[regress.Key]results.Cell
	// history is the baseline history (nil: no baseline); historyRoot,
	// when set, is where it is without baseline.runs or --baseline (a
	// judged run directory's, JudgeDir), instead of the runs folder the
	// run is filed under.
	history     *history
	historyRoot string
	locks       lockTable
	emitMu      sync.Mutex
	verdicts    []Verdict
	failed      []Verdict
	// inconclusive are the checks the machine's lateness could explain
	// (the latest measurement's; under emitMu).
	inconclusive []Verdict
	// remeasure names the cells (stage, cell id) whose first measurement
	// left a check inconclusive, with why: Env.Confirm measures them once
	// more while their server is up (under emitMu).
	remeasure map[[2]string]string
	cells     int
	// confirmations are the cells re-measured for baseline.confirm, by
	// cell id, with what their first measurement read (under emitMu).
	confirmations map[string]confirmation
	// judged is set once the run-level assertions and the baseline are
	// judged (judgeEnd); judgedSum is the run's outcome then, which post
	// stages post.
	judged    bool
	judgedSum *Summary
	// postRecords are the accounts of the sinks post stages drove.
	postMu      sync.Mutex
	postRecords []SinkRecord
	// sync is the run's link to its sibling shards (nil: not sharded).
	sync     *shardSync
	emitErr  error
	tally    cellTallies // each stage's cell rows and error rows
	manifest *Manifest
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
func Run(ctx context.Context, g *Graph, ri *RunInfo, opts Options) (*Summary, error) {
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
	// run prints or logs is redacted (pipeline/redact.go).
	RegisterPlanSecrets(g.Plan)
	progress, stageProgress, flushProgress := redactingProgress(opts.Progress)
	opts.Progress = progress
	defer flushProgress()
	if weak := redact.Weak(); len(weak) > 0 {
		fmt.Fprintf(progress, "benchrun: warning: a secret the plan sends is %d characters long: short enough to be guessed, and to be an ordinary word, so it is masked only where it stands alone (a key of %d or more characters is masked wherever it appears)\n", slices.Min(weak), redact.WeakLen)
	}
	defer scrubLogs(ri.Dir)
	r := &runner{g: g, ri: ri, opts: opts, states: map[string]*nodeState{}, asserts: map[string][]*Assertion{}, stageProgress: stageProgress}
	for _, n := range g.Nodes {
		r.states[n.Spec.Name] = &nodeState{node: n, status: StatusPending}
	}
	if ri.Resumed {
		// Refused before anything in the directory changes.
		r.idle = g.nothingLeftToResume(ri.doneCells)
		if err := checkResume(g, ri, r.idle); err != nil {
			return nil, &ExitError{Code: ExitInvalid, Err: err}
		}
	}
	r.sinks = newSinkSet(append(g.liveSinks(), opts.Sinks...), opts.Progress)
	r.manifest = newManifest(ri)
	r.manifest.Sinks = r.sinkRecords()
	if err := r.manifest.write(ri.Dir); err != nil {
		return nil, &ExitError{Code: ExitInfra, Err: err}
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
				r.finishManifest(nil, RunFailed, fmt.Sprintf("benchrun crashed: panic: %v", v), ExitInternal)
			}
			panic(v)
		}
	}()
	fail := func(code int, err error) (*Summary, error) {
		finished = true
		r.finishManifest(nil, RunFailed, err.Error(), code)
		return nil, &ExitError{Code: code, Err: err}
	}
	if ri.Resumed {
		r.noteResume()
		// Keep the plan as first written; record this attempt's resolution beside it.
		resolved, err := resolvedPlanText(g.Plan)
		if err != nil {
			return fail(ExitInvalid, err)
		}
		if len(ri.prevPlan) > 0 && string(ri.prevPlan) != string(resolved) {
			if err := WriteFileAtomic(filepath.Join(ri.Dir, "plan.resumed.json"), resolved); err != nil {
				return fail(ExitInfra, err)
			}
		}
	}
	if err := r.compileAssertions(); err != nil {
		return fail(ExitInvalid, err)
	}
	// Failed verdicts of cells a resume does not measure again still count.
	r.failed = append(r.failed, ri.priorFailed...)
	env := &SinkEnv{Run: ri, Stdout: opts.Stdout, Progress: opts.Progress, RateLadder: g.rateLadder(), NamedTests: g.namedTests(), Prior: priorRows(ri), HistoryRoot: historyRoot(ri.Dir)}
	if err := r.sinks.start(env); err != nil {
		return fail(ExitInfra, err)
	}

	runCtx := ctx
	if g.Plan.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, g.Plan.Timeout, fmt.Errorf("plan timeout %s exceeded", g.Plan.Timeout))
		defer cancel()
	}
	r.loadHistory()
	r.loadBaselineCells()
	if ri.Resumed {
		prior, err := env.Prior()
		if err != nil {
			return fail(ExitInfra, fmt.Errorf("reading the earlier attempts' rows: %w", err))
		}
		r.seedRows(prior)
	}
	var err error
	if r.sync, err = openShards(runCtx, opts, ri.ID, func(f string, a ...any) { fmt.Fprintf(opts.Progress, f+"\n", a...) }); err != nil {
		return fail(ExitInvalid, err)
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
		if sum.ExitCode == ExitOK || sum.ExitCode == ExitAssertion {
			sum.ExitCode = ExitInfra
			sum.Reason = reason
		}
	}
	sum.Sinks = r.sinkRecords()
	status := RunFailed
	switch {
	case sum.Interrupted:
		status = RunInterrupted
	case sum.ExitCode == ExitOK:
		status = RunOK
	}
	finished = true
	r.finishManifest(sum, status, sum.Reason, sum.ExitCode)
	return sum, nil
}

// finishManifest records how the attempt ended and rewrites manifest.json.
func (r *runner) finishManifest(sum *Summary, status, reason string, code int) {
	if sum != nil {
		r.manifest.Stages = sum.Stages
		r.manifest.Verdicts, r.manifest.Inconclusive = sum.Failed, sum.Inconclusive
	}
	r.manifest.Sinks = r.sinkRecords()
	if r.manifest.ModelDigest == "" && r.md != nil {
		r.manifest.ModelDigest = knownDigest(r.md.file, r.md.planDir)
	}
	at := time.Now()
	if sum != nil && !sum.FinishedAt.IsZero() {
		at = sum.FinishedAt // what result.json and the reports say too
	}
	r.manifest.finish(status, reason, code, at)
	if err := r.manifest.write(r.ri.Dir); err != nil {
		fmt.Fprintf(r.opts.Progress, "benchrun: %v\n", err)
	}
}

// noteResume tells what a resume found: the attempt it is, an attempt
// before it that crashed, temporary files a killed writer left.
func (r *runner) noteResume() {
	ri := r.ri
	fmt.Fprintf(r.opts.Progress, "benchrun: resuming run %s: attempt %d, %d cells already done\n", ri.ID, ri.Attempt, len(ri.doneCells))
	if c := ri.crashed; c != nil {
		who := ""
		if c.PID > 0 {
			who = fmt.Sprintf(" (pid %d on %s)", c.PID, c.Hostname)
		}
		fmt.Fprintf(r.opts.Progress, "benchrun: attempt %d%s, started %s, crashed: %s\n", c.Attempt, who, c.StartedAt.UTC().Format(time.RFC3339), c.Reason)
	}
	if n := len(ri.removed); n > 0 {
		fmt.Fprintf(r.opts.Progress, "benchrun: removed %d temporary files a killed writer left (%s)\n", n, strings.Join(ri.removed, ", "))
	}
}

func (r *runner) compileAssertions() error {
	var errs []error
	add := func(a schema.Assertion, declaredIn, stage string) {
		ca, err := CompileAssertion(a, declaredIn)
		if err != nil {
			errs = append(errs, err)
			return
		}
		if ca.Level == LevelRun {
			r.runAsserts = append(r.runAsserts, ca)
			return
		}
		r.asserts[stage] = append(r.asserts[stage], ca)
	}
	for _, n := range r.g.Nodes {
		for _, a := range n.Spec.Assert {
			add(a, n.Spec.Name, n.Spec.Name)
		}
	}
	for _, a := range r.g.Plan.Assert {
		if lvl, _, _ := levelOf(a.Expr); lvl == LevelRun {
			add(a, "", "") // once for the run, not once per stage
			continue
		}
		for _, n := range r.g.Nodes {
			if n.Kind.Measuring {
				add(a, "", n.Spec.Name)
			}
		}
	}
	return errors.Join(errs...)
}

type completion struct {
	name    string
	outputs *Outputs
	err     error
}

// schedule runs stages as their dependencies finish. ctx is the user's
// (cancelled on interrupt); runCtx adds the plan timeout.
func (r *runner) schedule(ctx, runCtx context.Context) {
	p := pool.New().WithMaxGoroutines(r.opts.MaxParallel)
	// Buffered for every stage: a worker never blocks handing back its
	// result, so the scheduler can block in p.Go when the pool is full.
	done := make(chan completion, len(r.g.Nodes))
	running := 0
	stopping := false // no new non-finally stages after an interrupt or plan timeout
	var stopReason string

	for {
		waiting := 0 // ready stages waiting for a lock
		if !stopping && runCtx.Err() != nil {
			stopping = true
			stopReason = fmt.Sprint(context.Cause(runCtx))
		}
		for _, n := range r.g.Nodes {
			st := r.states[n.Spec.Name]
			if st.status != StatusPending {
				continue
			}
			ready, failedDep, skippedDep, why := r.depsState(n)
			if !ready || n.Kind.AfterRun && !r.judged {
				continue
			}
			if stopping && !n.Spec.Finally {
				r.skip(st, "not started: "+stopReason)
				continue
			}
			if r.idle[n.Spec.Name] {
				// A resume whose cells are all done starts no server for them.
				r.skip(st, "skipped: nothing left to resume")
				continue
			}
			// A failed dependency skips the stage; a skipped one skips it
			// too unless its `when` reads that stage and so decides (like
			// GitHub Actions' implicit success() unless `if:` asks for the
			// status). Finally stages always run (their `when` still
			// applies).
			if failedDep && !n.Spec.Finally {
				r.skip(st, why)
				continue
			}
			if skippedDep && !n.Spec.Finally {
				r.skip(st, why)
				continue
			}
			if n.when != nil {
				ok, err := r.evalWhen(n)
				if err != nil {
					st.status, st.reason = StatusFailed, err.Error()
					fmt.Fprintf(r.opts.Progress, "✗ %s failed: %s\n", n.Spec.Name, st.reason)
					continue
				}
				if !ok {
					r.skip(st, fmt.Sprintf("skipped: when %q is false", n.Spec.When))
					continue
				}
			}
			// Its locks before a worker: a stage waiting for a GPU stays
			// pending (and says so once) until the holder frees it.
			want := r.wantedLocks(n)
			if ok, blocker := r.locks.take(n.Spec.Name, want); !ok {
				st.blocker = blocker
				if !st.waitNoted {
					st.waitNoted = true
					fmt.Fprintf(r.opts.Progress, "… %s waits for %s\n", n.Spec.Name, blocker)
				}
				waiting++
				continue
			}
			st.locks, st.blocker = want, ""
			st.status = StatusRunning
			st.started = time.Now()
			running++
			stageCtx := runCtx
			if n.Spec.Finally {
				// Finally stages run even after an interrupt, bounded in time.
				var cancel context.CancelFunc
				stageCtx, cancel = context.WithTimeout(context.WithoutCancel(ctx), r.opts.FinallyTimeout)
				_ = cancel // released when the stage's own context ends below
				defer cancel()
			}
			n := n
			fmt.Fprintf(r.opts.Progress, "▶ %s (%s)\n", n.Spec.Name, n.Kind.Name)
			p.Go(func() {
				out, err := r.runNodeSafely(stageCtx, n)
				done <- completion{name: n.Spec.Name, outputs: out, err: err}
			})
		}
		if running == 0 {
			if waiting > 0 && r.failDeadlocked() {
				continue // their dependents are skipped next round
			}
			if !r.judged && r.othersEnded() && r.hasAfterRun() {
				// Every other stage has ended: judge the run, then the
				// stages that post it.
				r.judgeEnd(ctx)
				continue
			}
			break
		}
		var c completion
		select {
		case c = <-done:
		case <-runCtx.Done():
			if !stopping {
				continue // loop once more to mark stopping, then wait for stages to end
			}
			c = <-done
		}
		running--
		r.finish(c)
		if st := r.states[c.name]; st.status != StatusSkipped && st.status != StatusUp {
			r.judgeStage(c.name)
		}
		r.releaseServices(ctx)
	}
	p.Wait()
	// Stop every service still up (the last dependents may have been
	// skipped), dependents before what they stand on.
	r.releaseServices(ctx)
	for i := len(r.g.Nodes) - 1; i >= 0; i-- {
		r.release(ctx, r.states[r.g.Nodes[i].Spec.Name])
	}
}

// depsState reports whether every dependency has finished (ready),
// whether one failed or was skipped (not counting skipped stages that the
// `when` reads), and why.
func (r *runner) depsState(n *Node) (ready, failed, skipped bool, why string) {
	for _, d := range n.Deps {
		ds := r.states[d]
		switch ds.status {
		case StatusPending, StatusRunning:
			return false, false, false, ""
		case StatusFailed:
			if !failed {
				failed, why = true, fmt.Sprintf("skipped: needs %s, which failed", d)
			}
		case StatusSkipped:
			if n.when != nil && slices.Contains(n.whenReads, d) {
				continue // the `when` reads this stage's status and decides
			}
			skipped = true
			if !failed && why == "" {
				why = fmt.Sprintf("skipped: needs %s, which was skipped", d)
			}
		}
	}
	return true, failed, skipped, why
}

func (r *runner) skip(st *nodeState, reason string) {
	st.status = StatusSkipped
	st.reason = reason
	fmt.Fprintf(r.opts.Progress, "- %s %s\n", st.node.Spec.Name, reason)
}

func (r *runner) finish(c completion) {
	st := r.states[c.name]
	defer func() {
		if st.status != StatusUp {
			r.locks.free(c.name, st.locks) // a service keeps its locks until released
		}
	}()
	st.duration = time.Since(st.started)
	st.outputs = c.outputs
	var ns *notStartedError
	switch {
	case errors.As(c.err, &ns):
		r.skip(st, "not started: "+ns.cause.Error())
	case c.err != nil:
		st.status = StatusFailed
		st.reason = safetext.String(c.err.Error())
		fmt.Fprintf(r.opts.Progress, "✗ %s failed after %s: %s\n", c.name, st.duration.Round(time.Millisecond), firstLine(st.reason))
	case c.outputs != nil && c.outputs.Done != nil:
		st.status = StatusUp
		fmt.Fprintf(r.opts.Progress, "✓ %s up at %s (%s)\n", c.name, c.outputs.URL, st.duration.Round(time.Millisecond))
	case r.tally.errorReason(c.name) != "":
		// It ran to its end, but measured nothing valid for some cells:
		// not ok (nor failed: its dependents still run).
		st.status, st.reason = StatusError, safetext.String(r.tally.errorReason(c.name))
		fmt.Fprintf(r.opts.Progress, "✗ %s ended with errors after %s: %s\n", c.name, st.duration.Round(time.Millisecond), firstLine(st.reason))
	default:
		st.status = StatusOK
		fmt.Fprintf(r.opts.Progress, "✓ %s ok (%s)\n", c.name, st.duration.Round(time.Millisecond))
	}
}

// OneLine is a reason in one line (see firstLine): for a row's reason,
// whose log holds the rest.
func OneLine(s string) string { return firstLine(s) }

// firstLine is a reason in one line, for the summary, the progress and
// the manifest's run reason: its first line, and, when what follows is a
// log's tail ("  | " lines: a server that exited before listening), the
// tail's last line that reads as an error ("… | error: bad flag -x"), or
// its last line that is not JSON data when none does: a program's stdout
// and stderr share the log in whatever order the pipes gave them, so its
// data ("[", a record) may follow its error.
func firstLine(s string) string {
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		return s
	}
	first := s[:i]
	var tail []string
	for _, l := range strings.Split(strings.TrimRight(s[i+1:], "\n"), "\n") {
		if l, ok := strings.CutPrefix(l, "  | "); ok && strings.TrimSpace(l) != "" {
			tail = append(tail, strings.TrimSpace(l))
		}
	}
	for j := len(tail) - 1; j >= 0; j-- {
		if procrun.IsErrorLine(tail[j]) {
			return first + " … | " + tail[j]
		}
	}
	for j := len(tail) - 1; j >= 0; j-- {
		if !strings.HasPrefix(tail[j], "{") && !strings.HasPrefix(tail[j], "[") || j == 0 {
			return first + " … | " + tail[j] // a JSON record is data, not a cause
		}
	}
	return first + " …"
}

// releaseServices stops every service none of whose dependents can still
// run. A dependent that is itself a service still up (a server on a
// provisioned machine) keeps what it stands on busy, so services stop in
// reverse dependency order: the server first, then the machine under it.
func (r *runner) releaseServices(ctx context.Context) {
	for changed := true; changed; {
		changed = false
		for i := len(r.g.Nodes) - 1; i >= 0; i-- {
			n := r.g.Nodes[i]
			st := r.states[n.Spec.Name]
			if st.status != StatusUp || st.released {
				continue
			}
			busy := false
			for _, d := range r.g.Dependents(n.Spec.Name) {
				switch r.states[d.Spec.Name].status {
				case StatusPending, StatusRunning, StatusUp:
					busy = true
				}
			}
			if !busy {
				r.release(ctx, st)
				changed = true
			}
		}
	}
}

// release stops a service (or cleans up any stage holding resources) once.
func (r *runner) release(ctx context.Context, st *nodeState) {
	if st.cleanedUp || st.node.Stage == nil || st.status == StatusPending || st.status == StatusSkipped {
		return
	}
	st.cleanedUp = true
	defer r.locks.free(st.node.Spec.Name, st.locks)
	if st.status == StatusUp {
		st.released = true
		if died, reason := serviceDied(st.outputs); died {
			st.status = StatusFailed
			st.reason = "died while in use: " + reason
		} else if why := r.currentErrors(st.node.Spec.Name); why != "" {
			st.status, st.reason = StatusError, why // a start-up that failed
		} else {
			st.status = StatusOK
		}
		// Its rows (a launch stage's start-ups) are all in once the
		// stages using it have ended.
		r.judgeStage(st.node.Spec.Name)
	}
	if c, ok := st.node.Stage.(Cleaner); ok {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.FinallyTimeout)
		defer cancel()
		if err := c.Cleanup(cctx); err != nil {
			fmt.Fprintf(r.opts.Progress, "benchrun: cleanup of %s: %v\n", st.node.Spec.Name, err)
		}
	}
}

func serviceDied(o *Outputs) (bool, string) {
	if o == nil || o.Done == nil {
		return false, ""
	}
	select {
	case <-o.Done:
		reason := "exited"
		if o.DoneReason != nil {
			reason = o.DoneReason()
		}
		return true, reason
	default:
		return false, ""
	}
}

// attempt is the number every row of this attempt carries.
func (r *runner) attempt() int64 { return int64(max(r.ri.Attempt, 1)) }

// emitAttempt stamps a cell row and its requests with the attempt, then
// emits them (the outputs stamp the verdict rows from the cell row).
func (r *runner) emitAttempt(cell results.Cell, reqs []results.Request) error {
	if cell.Attempt == 0 {
		cell.Attempt = r.attempt()
	}
	for i := range reqs {
		if reqs[i].Attempt == 0 {
			reqs[i].Attempt = cell.Attempt
		}
	}
	r.tally.add(cell)
	return r.emit(cell, reqs)
}

// emitSamplesAttempt stamps telemetry rows with the attempt and emits them.
func (r *runner) emitSamplesAttempt(rows []results.Sample) error {
	for i := range rows {
		if rows[i].Attempt == 0 {
			rows[i].Attempt = r.attempt()
		}
	}
	return r.emitSamples(rows)
}

// runNodeSafely runs a stage and turns a panic in it into the stage's
// failure (the stack goes to its log), so that the run still stops its
// servers, runs its finally stages and finishes its manifest.
func (r *runner) runNodeSafely(ctx context.Context, n *Node) (out *Outputs, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("stage %s crashed: panic: %v (stack in %s.log)", n.Spec.Name, v, n.Spec.Name)
			if f, ferr := os.OpenFile(filepath.Join(r.ri.Dir, n.Spec.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); ferr == nil {
				fmt.Fprint(f, redact.String(fmt.Sprintf("panic: %v\n\n%s", v, debug.Stack())))
				f.Close()
			}
		}
	}()
	return r.runNode(ctx, n)
}

// runNode runs one stage with its locks, timeout, retries and the
// watchdog that cancels it when a service it uses dies.
func (r *runner) runNode(ctx context.Context, n *Node) (*Outputs, error) {
	st := r.states[n.Spec.Name]
	if ctx.Err() != nil {
		// Interrupted (or out of plan time) before it started: skipped,
		// not failed.
		return nil, &notStartedError{cause: context.Cause(ctx)}
	}
	r.joinDigest(ctx, n)

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	deps := map[string]*Outputs{}
	for _, d := range n.Deps {
		out := r.states[d].outputs
		if out == nil {
			out = &Outputs{}
		}
		deps[d] = out
		if out.Done != nil {
			go func(service string, o *Outputs) {
				select {
				case <-o.Done:
					reason := "exited"
					if o.DoneReason != nil {
						reason = o.DoneReason()
					}
					cancel(&ServiceDiedError{Service: service, Reason: reason})
				case <-ctx.Done():
				}
			}(d, out)
		}
	}
	if n.Spec.Timeout > 0 {
		var tcancel context.CancelFunc
		ctx, tcancel = context.WithTimeoutCause(ctx, n.Spec.Timeout, &TimeoutError{Stage: n.Spec.Name, Timeout: n.Spec.Timeout})
		defer tcancel()
	}

	logf, err := os.OpenFile(filepath.Join(r.ri.Dir, n.Spec.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening stage log: %w", err)
	}
	defer logf.Close()
	logw := redact.NewWriter(logf) // what the stage logs, secrets masked
	defer func() { _ = logw.Flush() }()
	env := &Env{
		Stage: n.Spec, Plan: r.g.Plan, Graph: r.g, RunID: r.ri.ID, Dir: r.ri.Dir, Deps: deps,
		Log: logw, Progress: r.stageProgress, Emit: r.emitAttempt, EmitSamples: r.emitSamplesAttempt, Keep: r.opts.Keep,
		doneCells: r.ri.doneCells, confirm: r.needsConfirmation, post: r.post, rows: r.stageRows,
		shard: r.opts.Shard, shards: r.opts.Shards, startAt: r.opts.StartAt, sync: r.sync,
	}

	attempts := 1
	var backoff time.Duration
	if n.Spec.Retry != nil && !n.Kind.Measuring {
		attempts, backoff = n.Spec.Retry.Attempts, n.Spec.Retry.Backoff
	}
	var out *Outputs
	for i := 1; i <= attempts; i++ {
		st.attempts = i
		out, err = n.Stage.Run(ctx, env)
		if err == nil || ctx.Err() != nil || i == attempts {
			break
		}
		fmt.Fprintf(r.opts.Progress, "↻ %s attempt %d/%d failed: %s; retrying in %s\n", n.Spec.Name, i, attempts, firstLine(err.Error()), backoff)
		if c, ok := n.Stage.(Cleaner); ok {
			_ = c.Cleanup(context.WithoutCancel(ctx))
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff *= 2
	}
	if err != nil {
		// Say why the context ended when that is the real reason.
		// A stage that already said it (a sweep names the server's death
		// itself) is not told twice.
		if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) && ctx.Err() != nil && !strings.Contains(err.Error(), cause.Error()) {
			err = fmt.Errorf("%w (%v)", cause, err)
		}
		if out == nil || out.Done == nil {
			if c, ok := n.Stage.(Cleaner); ok {
				st.cleanedUp = true
				_ = c.Cleanup(context.WithoutCancel(ctx))
			}
		}
		return out, err
	}
	if out == nil {
		out = &Outputs{}
	}
	// A stage that finished while a service it used was dying (its streams
	// broke, it wrote error rows and returned) did not succeed: the
	// watchdog may not have fired yet because the exit is not reaped.
	if derr := r.depDied(deps); derr != nil {
		if c, ok := n.Stage.(Cleaner); ok && out.Done == nil {
			st.cleanedUp = true
			_ = c.Cleanup(context.WithoutCancel(ctx))
		}
		return out, derr
	}
	if out.Done == nil {
		// Not a service: release what it holds now.
		if c, ok := n.Stage.(Cleaner); ok {
			st.cleanedUp = true
			if cerr := c.Cleanup(context.WithoutCancel(ctx)); cerr != nil {
				return out, fmt.Errorf("cleanup: %w", cerr)
			}
		}
	}
	return out, nil
}

// wantedLocks are the stage's resource locks: its resources, or "gpu" for
// a measuring stage that names none, without those a service it stands
// on holds while up (a sweep of a server holding "gpu" measures that
// server's GPU: it runs inside the server's hold, not against it). A
// device lock "gpu:0" also holds its family "gpu" shared.
func (r *runner) wantedLocks(n *Node) []lockReq {
	res := slices.Clone(n.Spec.Resources)
	if len(res) == 0 && n.Kind.Measuring {
		res = []string{"gpu"}
	}
	inherited := r.ancestorLocks(n)
	covered := func(name string) bool {
		family, _, isDevice := strings.Cut(name, ":")
		for held := range inherited {
			hf, _, heldDevice := strings.Cut(held, ":")
			switch {
			case held == name:
				return true
			case !isDevice && hf == name: // "gpu" under a service on "gpu:0"
				return true
			case isDevice && !heldDevice && held == family: // "gpu:0" under a service on "gpu"
				return true
			}
		}
		return false
	}
	exclusive := map[string]bool{}
	shared := map[string]bool{}
	for _, name := range res {
		if covered(name) {
			continue
		}
		if family, _, ok := strings.Cut(name, ":"); ok && family != "" {
			shared[family] = true
		}
		exclusive[name] = true
	}
	var out []lockReq
	for name := range exclusive {
		out = append(out, lockReq{name: name})
	}
	for f := range shared {
		if !exclusive[f] {
			out = append(out, lockReq{name: f, shared: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// ancestorLocks are the locks held by the services (up) this stage
// stands on, directly or through other stages.
func (r *runner) ancestorLocks(n *Node) map[string]bool {
	out := map[string]bool{}
	seen := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		st := r.states[name]
		if st == nil {
			return
		}
		if st.status == StatusUp {
			for _, l := range st.locks {
				out[l.name] = true
			}
		}
		for _, d := range st.node.Deps {
			visit(d)
		}
	}
	for _, d := range n.Deps {
		visit(d)
	}
	return out
}

func (r *runner) summary(ctx context.Context) *Summary {
	sum := &Summary{Run: r.ri, FinishedAt: time.Now(), Cells: r.cells, Verdicts: r.verdicts, Failed: r.failed, Inconclusive: r.inconclusive, EarlierFailed: len(r.ri.priorFailed)}
	sum.Interrupted = ctx.Err() != nil
	infra := r.emitErr != nil
	for _, n := range r.g.Nodes {
		st := r.states[n.Spec.Name]
		sum.Stages = append(sum.Stages, StageResult{
			Name: n.Spec.Name, Kind: n.Kind.Name, Status: st.status, Reason: st.reason,
			DurationS: st.duration.Seconds(), Attempts: st.attempts,
		})
		if st.status == StatusFailed || st.status == StatusError {
			infra = true // an error cell measured nothing valid: never exit 0
		}
	}
	// A plan that measures, whose every measuring stage was skipped (a
	// `when` that never held: a mistyped tag), measured nothing: never
	// green. (A resume with nothing left keeps its earlier rows.)
	nothing := ""
	if r.cells == 0 && !r.ri.Resumed {
		var skipped []string
		measuring := 0
		for _, n := range r.g.Nodes {
			if !n.Kind.Measuring {
				continue
			}
			measuring++
			if st := r.states[n.Spec.Name]; st.status == StatusSkipped {
				skipped = append(skipped, fmt.Sprintf("%s (%s)", n.Spec.Name, firstLine(st.reason)))
			}
		}
		if measuring > 0 && len(skipped) == measuring {
			nothing = "nothing was measured: every measuring stage was skipped: " + strings.Join(skipped, "; ")
			infra = true
		}
	}
	switch {
	case sum.Interrupted:
		sum.ExitCode = ExitInterrupted
		sum.Reason = fmt.Sprint(context.Cause(ctx))
	case infra:
		sum.ExitCode = ExitInfra
		// A required sink that failed is the first thing to say: what it
		// did not write (a stage that could not emit failed because of it).
		sum.Reason = r.sinks.failedReason()
		for _, s := range sum.Stages {
			if sum.Reason != "" {
				break
			}
			if s.Status == StatusFailed {
				sum.Reason = fmt.Sprintf("stage %s failed: %s", s.Name, firstLine(s.Reason))
				break
			}
		}
		for _, s := range sum.Stages {
			if s.Status == StatusError && sum.Reason == "" {
				sum.Reason = fmt.Sprintf("stage %s: %s", s.Name, firstLine(s.Reason))
			}
		}
		if sum.Reason == "" && r.emitErr != nil {
			sum.Reason = "rows not stored: " + firstLine(r.emitErr.Error())
		}
		if sum.Reason == "" {
			sum.Reason = nothing
		}
	case len(r.failed) > 0:
		sum.ExitCode = ExitAssertion
		sum.Reason = fmt.Sprintf("%d assertion checks failed", len(r.failed))
	case len(r.inconclusive) > 0 && r.inconclusiveFails():
		sum.ExitCode = ExitInconclusive
		sum.Reason = fmt.Sprintf("%d checks inconclusive: the machine's own lateness could explain them (inconclusive: fail)", len(r.inconclusive))
	default:
		sum.ExitCode = ExitOK
	}
	return sum
}

// PrintSummary writes the end-of-run summary for people.
func PrintSummary(w io.Writer, sum *Summary) {
	earlier := ""
	if sum.EarlierFailed > 0 {
		earlier = fmt.Sprintf(" (%d of them judged by earlier attempts, on cells already done)", sum.EarlierFailed)
	}
	inconclusive := ""
	if n := len(sum.Inconclusive); n > 0 {
		inconclusive = fmt.Sprintf(", %d inconclusive", n)
	}
	fmt.Fprintf(w, "\nrun %s: %d cell rows, %d assertion checks, %d failed%s%s\n", sum.Run.ID, sum.Cells, len(sum.Verdicts), len(sum.Failed), inconclusive, earlier)
	for _, s := range sum.Stages {
		line := fmt.Sprintf("  %-14s %-9s %-8s %6.1fs", s.Name, s.Kind, s.Status, s.DurationS)
		if s.Attempts > 1 {
			line += fmt.Sprintf("  (%d attempts)", s.Attempts)
		}
		if s.Reason != "" {
			line += "  " + firstLine(s.Reason)
		}
		fmt.Fprintln(w, line)
	}
	if line := verdictCounts(sum.Verdicts); line != "" {
		fmt.Fprintf(w, "  verdicts: %s\n", line)
	}
	// One screen: the first failures, then how many more and where.
	const shown = 10
	for i, v := range sum.Failed {
		if i == shown {
			fmt.Fprintf(w, "  … and %d more failed checks (report.md, junit.xml, the assertions table)\n", len(sum.Failed)-shown)
			break
		}
		what := verdictWhat(v)
		fmt.Fprintf(w, "  FAIL %s: %s on %s (%s)\n", v.Pos, what, v.Cell, v.FormatValues())
	}
	for i, v := range sum.Inconclusive {
		if i == shown {
			fmt.Fprintf(w, "  … and %d more inconclusive checks (report.md, junit.xml, the assertions table)\n", len(sum.Inconclusive)-shown)
			break
		}
		fmt.Fprintf(w, "  INCONCLUSIVE %s: %s on %s: %s\n", v.Pos, verdictWhat(v), v.Cell, v.Explained)
	}
	fmt.Fprintf(w, "  results: %s\n", sum.Run.Dir)
}

// verdictWhat names a verdict's check: its expression, with its name.
func verdictWhat(v Verdict) string {
	if v.Name != "" && v.Level != LevelRegression {
		return fmt.Sprintf("%s (%q)", v.Name, v.Assertion)
	}
	return fmt.Sprintf("%q", v.Assertion)
}

// inconclusiveFails says whether an inconclusive verdict fails the run:
// --inconclusive, else the plan's inconclusive.
func (r *runner) inconclusiveFails() bool {
	policy := r.opts.Inconclusive
	if policy == "" && r.g != nil && r.g.Plan != nil {
		policy = r.g.Plan.Inconclusive
	}
	return policy == InconclusiveFail
}

// verdictCounts sums the verdicts up by level and outcome in one line:
// "row 8 pass 1 fail · stage 2 pass · regression 4 same 1 regressed".
func verdictCounts(vs []Verdict) string {
	type key struct{ level, outcome string }
	counts := map[key]int{}
	var levels []string
	for _, v := range vs {
		lvl := v.Level
		if lvl == "" {
			lvl = LevelRow
		}
		out := "pass"
		switch {
		case v.Level == LevelRegression:
			out = v.Values["outcome"]
			if out == "" {
				out = map[bool]string{true: "ok", false: "regressed"}[v.Passed]
			}
		case v.Inconclusive:
			out = "inconclusive"
		case !v.Passed && v.Severity == SeverityWarn:
			out = "warn"
		case v.Error != "":
			out = "error"
		case !v.Passed:
			out = "fail"
		}
		if !slices.Contains(levels, lvl) {
			levels = append(levels, lvl)
		}
		counts[key{lvl, out}]++
	}
	var parts []string
	for _, lvl := range levels {
		var outs []string
		for k, n := range counts {
			if k.level == lvl {
				outs = append(outs, fmt.Sprintf("%d %s", n, k.outcome))
			}
		}
		sort.Strings(outs)
		parts = append(parts, lvl+" "+strings.Join(outs, " "))
	}
	return strings.Join(parts, " · ")
}

// depDied reports a service among deps that has died, waiting briefly for
// the exit of one whose process is already gone to be reaped (so that the
// reason carries the exit status and log tail).
func (r *runner) depDied(deps map[string]*Outputs) error {
	for name, o := range deps {
		if o.Done == nil {
			continue
		}
		if died, reason := serviceDied(o); died {
			return &ServiceDiedError{Service: name, Reason: reason}
		}
		if o.PID > 0 && processGone(o.PID) {
			select {
			case <-o.Done:
				reason := "exited"
				if o.DoneReason != nil {
					reason = o.DoneReason()
				}
				return &ServiceDiedError{Service: name, Reason: reason}
			case <-time.After(2 * time.Second):
				return &ServiceDiedError{Service: name, Reason: fmt.Sprintf("process %d is gone", o.PID)}
			}
		}
	}
	return nil
}

// failDeadlocked fails the ready stages that wait for a lock when nothing
// runs that could free it (a service holding it stays up for a stage that
// waits behind it): they would wait forever. It reports whether it failed
// any.
func (r *runner) failDeadlocked() bool {
	failed := false
	for _, n := range r.g.Nodes {
		st := r.states[n.Spec.Name]
		if st.status != StatusPending || st.blocker == "" {
			continue
		}
		// Nothing runs and no lock changed hands since the scan that
		// found it waiting: its blocker holds on.
		st.status = StatusFailed
		st.reason = fmt.Sprintf("waits for %s, which nothing running will free (a service holding it stays up until its dependents end): give the stages different resources, or make this stage need the holder's dependents", st.blocker)
		fmt.Fprintf(r.opts.Progress, "✗ %s failed: %s\n", n.Spec.Name, st.reason)
		failed = true
	}
	return failed
}
