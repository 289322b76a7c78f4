package engine

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/pipeline"
)

// historyRoot is the folder runs are filed under: runs/plan=P/date=D/run=ID
// is three below it.
func historyRoot(runDir string) string {
	return filepath.Dir(filepath.Dir(filepath.Dir(runDir)))
}

// othersEnded reports whether every stage that does not run after the run
// is judged has ended (services may still be up).
func (r *runner) othersEnded() bool {
	for _, n := range r.g.Nodes {
		if n.Kind.AfterRun {
			continue
		}
		if st := r.states[n.Spec.Name].status; st == pipeline.StatusPending || st == pipeline.StatusRunning {
			return false
		}
	}
	return true
}

// judgeEnd judges the run-level assertions and the baseline once every
// measuring stage has ended, and keeps the outcome as judged for the
// stages that run after it (post). Called from the scheduler's goroutine.
func (r *runner) judgeEnd(ctx context.Context) {
	if r.judged {
		return
	}
	r.judged = true
	r.judgeServices()
	r.judgeRun()
	if ctx.Err() == nil {
		r.judgeBaseline()
	}
	sum := r.summary(ctx)
	sum.Stages = slices.DeleteFunc(sum.Stages, func(s pipeline.StageResult) bool {
		n := r.g.Node(s.Name)
		return n != nil && n.Kind.AfterRun
	})
	sum.Status = pipeline.RunFailed
	switch {
	case sum.Interrupted:
		sum.Status = pipeline.RunInterrupted
	case sum.ExitCode == pipeline.ExitOK:
		sum.Status = pipeline.RunOK
	}
	redactSummary(sum)
	r.judgedSum = sum
}

// post is Env.Post: the named sinks, built afresh from their plan entries,
// driven from the run directory with the run's outcome as judged.
func (r *runner) post(ctx context.Context, names []string) error {
	if r.judgedSum == nil {
		return fmt.Errorf("posting before the run was judged (a bug)")
	}
	var uses []*pipeline.SinkUse
	for _, name := range names {
		i := slices.IndexFunc(r.g.Sinks, func(u *pipeline.SinkUse) bool { return u.Name() == name })
		if i < 0 {
			return fmt.Errorf("the plan has no sink named %q", name) // vet refuses it
		}
		u := *r.g.Sinks[i]
		s, err := u.Kind.New(u.Spec)
		if err != nil {
			return fmt.Errorf("sink %s: %w", name, err)
		}
		u.Sink = s
		uses = append(uses, &u)
	}
	sum := *r.judgedSum
	out, err := ReplayWith(r.ri.Dir, uses, ReplayOptions{Summary: &sum, Progress: r.opts.Progress, RunInfo: r.ri})
	r.postMu.Lock()
	defer r.postMu.Unlock()
	if out != nil {
		for _, rec := range out.Sinks {
			r.postRecords = slices.DeleteFunc(r.postRecords, func(o pipeline.SinkRecord) bool { return o.Name == rec.Name })
			r.postRecords = append(r.postRecords, rec)
		}
	}
	return err
}

// sinkRecords are every sink's account for the manifest: the live ones',
// then the posted ones' (pending until their post stage ran).
func (r *runner) sinkRecords() []pipeline.SinkRecord {
	out := r.sinks.records()
	r.postMu.Lock()
	defer r.postMu.Unlock()
	for _, u := range r.g.Sinks {
		if u.PostedBy == "" {
			continue
		}
		if i := slices.IndexFunc(r.postRecords, func(rec pipeline.SinkRecord) bool { return rec.Name == u.Name() }); i >= 0 {
			out = append(out, r.postRecords[i])
			continue
		}
		out = append(out, pipeline.SinkRecord{Name: u.Name(), Kind: u.Kind.Name, Required: !u.Optional, Status: pipeline.SinkPending, Config: redact.Value(maps.Clone(u.Spec.Params))})
	}
	return out
}

func (r *runner) hasAfterRun() bool {
	return slices.ContainsFunc(r.g.Nodes, func(n *pipeline.Node) bool { return n.Kind.AfterRun })
}
