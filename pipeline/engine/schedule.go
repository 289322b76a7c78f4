package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/benchrun/benchrun/internal/safetext"
	"github.com/benchrun/benchrun/pipeline"
)

type completion struct {
	name    string
	outputs *pipeline.Outputs
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
			if st.status != pipeline.StatusPending {
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
			if n.HasWhen() {
				ok, err := r.evalWhen(n)
				if err != nil {
					st.status, st.reason = pipeline.StatusFailed, err.Error()
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
			st.status = pipeline.StatusRunning
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
		if st := r.states[c.name]; st.status != pipeline.StatusSkipped && st.status != pipeline.StatusUp {
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
func (r *runner) depsState(n *pipeline.Node) (ready, failed, skipped bool, why string) {
	for _, d := range n.Deps {
		ds := r.states[d]
		switch ds.status {
		case pipeline.StatusPending, pipeline.StatusRunning:
			return false, false, false, ""
		case pipeline.StatusFailed:
			if !failed {
				failed, why = true, fmt.Sprintf("skipped: needs %s, which failed", d)
			}
		case pipeline.StatusSkipped:
			if n.HasWhen() && n.WhenReads(d) {
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
	st.status = pipeline.StatusSkipped
	st.reason = reason
	fmt.Fprintf(r.opts.Progress, "- %s %s\n", st.node.Spec.Name, reason)
}

func (r *runner) finish(c completion) {
	st := r.states[c.name]
	defer func() {
		if st.status != pipeline.StatusUp {
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
		st.status = pipeline.StatusFailed
		st.reason = safetext.String(c.err.Error())
		fmt.Fprintf(r.opts.Progress, "✗ %s failed after %s: %s\n", c.name, st.duration.Round(time.Millisecond), pipeline.OneLine(st.reason))
	case c.outputs != nil && c.outputs.Done != nil:
		st.status = pipeline.StatusUp
		fmt.Fprintf(r.opts.Progress, "✓ %s up at %s (%s)\n", c.name, c.outputs.URL, st.duration.Round(time.Millisecond))
	case r.tally.errorReason(c.name) != "":
		// It ran to its end, but measured nothing valid for some cells:
		// not ok (nor failed: its dependents still run).
		st.status, st.reason = pipeline.StatusError, safetext.String(r.tally.errorReason(c.name))
		fmt.Fprintf(r.opts.Progress, "✗ %s ended with errors after %s: %s\n", c.name, st.duration.Round(time.Millisecond), pipeline.OneLine(st.reason))
	default:
		st.status = pipeline.StatusOK
		fmt.Fprintf(r.opts.Progress, "✓ %s ok (%s)\n", c.name, st.duration.Round(time.Millisecond))
	}
}

// wantedLocks are the stage's resource locks: its resources, or "gpu" for
// a measuring stage that names none, without those a service it stands
// on holds while up (a sweep of a server holding "gpu" measures that
// server's GPU: it runs inside the server's hold, not against it). A
// device lock "gpu:0" also holds its family "gpu" shared.
func (r *runner) wantedLocks(n *pipeline.Node) []lockReq {
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
func (r *runner) ancestorLocks(n *pipeline.Node) map[string]bool {
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
		if st.status == pipeline.StatusUp {
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

// failDeadlocked fails the ready stages that wait for a lock when nothing
// runs that could free it (a service holding it stays up for a stage that
// waits behind it): they would wait forever. It reports whether it failed
// any.
func (r *runner) failDeadlocked() bool {
	failed := false
	for _, n := range r.g.Nodes {
		st := r.states[n.Spec.Name]
		if st.status != pipeline.StatusPending || st.blocker == "" {
			continue
		}
		// Nothing runs and no lock changed hands since the scan that
		// found it waiting: its blocker holds on.
		st.status = pipeline.StatusFailed
		st.reason = fmt.Sprintf("waits for %s, which nothing running will free (a service holding it stays up until its dependents end): give the stages different resources, or make this stage need the holder's dependents", st.blocker)
		fmt.Fprintf(r.opts.Progress, "✗ %s failed: %s\n", n.Spec.Name, st.reason)
		failed = true
	}
	return failed
}
