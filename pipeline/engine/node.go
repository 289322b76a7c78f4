package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

// notStartedError ends a stage whose run was cancelled while it waited
// for its locks.
type notStartedError struct{ cause error }

func (e *notStartedError) Error() string { return "not started: " + e.cause.Error() }

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
			if st.status != pipeline.StatusUp || st.released {
				continue
			}
			busy := false
			for _, d := range r.g.Dependents(n.Spec.Name) {
				switch r.states[d.Spec.Name].status {
				case pipeline.StatusPending, pipeline.StatusRunning, pipeline.StatusUp:
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
	if st.cleanedUp || st.node.Stage == nil || st.status == pipeline.StatusPending || st.status == pipeline.StatusSkipped {
		return
	}
	st.cleanedUp = true
	defer r.locks.free(st.node.Spec.Name, st.locks)
	if st.status == pipeline.StatusUp {
		st.released = true
		if died, reason := serviceDied(st.outputs); died {
			st.status = pipeline.StatusFailed
			st.reason = "died while in use: " + reason
		} else if why := r.currentErrors(st.node.Spec.Name); why != "" {
			st.status, st.reason = pipeline.StatusError, why // a start-up that failed
		} else {
			st.status = pipeline.StatusOK
		}
		// Its rows (a launch stage's start-ups) are all in once the
		// stages using it have ended.
		r.judgeStage(st.node.Spec.Name)
	}
	if c, ok := st.node.Stage.(pipeline.Cleaner); ok {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.FinallyTimeout)
		defer cancel()
		if err := c.Cleanup(cctx); err != nil {
			fmt.Fprintf(r.opts.Progress, "benchrun: cleanup of %s: %v\n", st.node.Spec.Name, err)
		}
	}
}

func serviceDied(o *pipeline.Outputs) (bool, string) {
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
func (r *runner) emitAttempt(cell results.Cell, reqs results.Requests) error {
	if cell.Attempt == 0 {
		cell.Attempt = r.attempt()
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
func (r *runner) runNodeSafely(ctx context.Context, n *pipeline.Node) (out *pipeline.Outputs, err error) {
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
func (r *runner) runNode(ctx context.Context, n *pipeline.Node) (*pipeline.Outputs, error) {
	st := r.states[n.Spec.Name]
	if ctx.Err() != nil {
		// Interrupted (or out of plan time) before it started: skipped,
		// not failed.
		return nil, &notStartedError{cause: context.Cause(ctx)}
	}
	r.joinDigest(ctx, n)

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	deps := map[string]*pipeline.Outputs{}
	for _, d := range n.Deps {
		out := r.states[d].outputs
		if out == nil {
			out = &pipeline.Outputs{}
		}
		deps[d] = out
		if out.Done != nil {
			go func(service string, o *pipeline.Outputs) {
				select {
				case <-o.Done:
					reason := "exited"
					if o.DoneReason != nil {
						reason = o.DoneReason()
					}
					cancel(&pipeline.ServiceDiedError{Service: service, Reason: reason})
				case <-ctx.Done():
				}
			}(d, out)
		}
	}
	if n.Spec.Timeout > 0 {
		var tcancel context.CancelFunc
		ctx, tcancel = context.WithTimeoutCause(ctx, n.Spec.Timeout, &pipeline.TimeoutError{Stage: n.Spec.Name, Timeout: n.Spec.Timeout})
		defer tcancel()
	}

	logf, err := os.OpenFile(filepath.Join(r.ri.Dir, n.Spec.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening stage log: %w", err)
	}
	defer logf.Close()
	logw := redact.NewWriter(logf) // what the stage logs, secrets masked
	defer func() { _ = logw.Flush() }()
	env := &pipeline.Env{
		Stage: n.Spec, Plan: r.g.Plan, Graph: r.g, RunID: r.ri.ID, Dir: r.ri.Dir, Deps: deps,
		Log: logw, Progress: r.stageProgress, Emit: r.emitAttempt, EmitSamples: r.emitSamplesAttempt, Keep: r.opts.Keep,
		Runtime: stageRuntime{r}, Live: r.opts.Live,
	}
	if r.opts.Live != nil {
		defer r.opts.Live.Stage(n.Spec.Name, n.Spec.Kind)()
	}

	attempts := 1
	var backoff time.Duration
	if n.Spec.Retry != nil && !n.Kind.Measuring {
		attempts, backoff = n.Spec.Retry.Attempts, n.Spec.Retry.Backoff
	}
	var out *pipeline.Outputs
	err = retrying(attempts, backoff,
		func(i int) error {
			st.attempts = i
			var err error
			out, err = n.Stage.Run(ctx, env)
			return err
		},
		func(i int, err error, next time.Duration) bool {
			if ctx.Err() != nil {
				return false
			}
			fmt.Fprintf(r.opts.Progress, "↻ %s attempt %d/%d failed: %s; retrying in %s\n", n.Spec.Name, i, attempts, pipeline.OneLine(err.Error()), next)
			if c, ok := n.Stage.(pipeline.Cleaner); ok {
				_ = c.Cleanup(context.WithoutCancel(ctx))
			}
			return true
		},
		func(d time.Duration) bool {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
			return true
		})
	if err != nil {
		// Say why the context ended when that is the real reason.
		// A stage that already said it (a sweep names the server's death
		// itself) is not told twice.
		if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) && ctx.Err() != nil && !strings.Contains(err.Error(), cause.Error()) {
			err = fmt.Errorf("%w (%v)", cause, err)
		}
		if out == nil || out.Done == nil {
			if c, ok := n.Stage.(pipeline.Cleaner); ok {
				st.cleanedUp = true
				_ = c.Cleanup(context.WithoutCancel(ctx))
			}
		}
		return out, err
	}
	if out == nil {
		out = &pipeline.Outputs{}
	}
	// A stage that finished while a service it used was dying (its streams
	// broke, it wrote error rows and returned) did not succeed: the
	// watchdog may not have fired yet because the exit is not reaped.
	if derr := r.depDied(deps); derr != nil {
		if c, ok := n.Stage.(pipeline.Cleaner); ok && out.Done == nil {
			st.cleanedUp = true
			_ = c.Cleanup(context.WithoutCancel(ctx))
		}
		return out, derr
	}
	if out.Done == nil {
		// Not a service: release what it holds now.
		if c, ok := n.Stage.(pipeline.Cleaner); ok {
			st.cleanedUp = true
			if cerr := c.Cleanup(context.WithoutCancel(ctx)); cerr != nil {
				return out, fmt.Errorf("cleanup: %w", cerr)
			}
		}
	}
	return out, nil
}

// depDied reports a service among deps that has died, waiting briefly for
// the exit of one whose process is already gone to be reaped (so that the
// reason carries the exit status and log tail).
func (r *runner) depDied(deps map[string]*pipeline.Outputs) error {
	for name, o := range deps {
		if o.Done == nil {
			continue
		}
		if died, reason := serviceDied(o); died {
			return &pipeline.ServiceDiedError{Service: name, Reason: reason}
		}
		if o.PID > 0 && processGone(o.PID) {
			select {
			case <-o.Done:
				reason := "exited"
				if o.DoneReason != nil {
					reason = o.DoneReason()
				}
				return &pipeline.ServiceDiedError{Service: name, Reason: reason}
			case <-time.After(2 * time.Second):
				return &pipeline.ServiceDiedError{Service: name, Reason: fmt.Sprintf("process %d is gone", o.PID)}
			}
		}
	}
	return nil
}

// stageRuntime is the engine's side of a stage's Env (pipeline.Runtime):
// the judge decides whether a cell is measured again, the run's rows,
// posts, a resume's finished cells and the shards' lockstep.
type stageRuntime struct{ r *runner }

func (s stageRuntime) Confirm(row results.Cell) bool { return s.r.judge.Confirm(row) }
func (s stageRuntime) Post(ctx context.Context, sinks []string) error {
	return s.r.post(ctx, sinks)
}
func (s stageRuntime) StageRows(stage string) []results.Cell { return s.r.judge.Rows(stage) }
func (s stageRuntime) CellDone(cellID string) bool {
	return stateOf(s.r.ri).doneCells[cellID]
}
func (s stageRuntime) CellStart(ctx context.Context, cell string) (time.Time, error) {
	if s.r.sync == nil {
		return time.Time{}, nil
	}
	return s.r.sync.cellStart(ctx, cell)
}
func (s stageRuntime) Shard() (i, n int, startAt time.Time) {
	return s.r.opts.Shard, s.r.opts.Shards, s.r.opts.StartAt
}
