package pipeline

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/schema"
)

// linkPosters marks the sinks that post stages name as theirs (driven by
// the stage, not live) and checks that no other stage waits for a stage
// that runs after the run is judged.
func (g *Graph) linkPosters() schema.Errors {
	var errs schema.Errors
	for _, n := range g.Nodes {
		if p, ok := n.Stage.(SinkPoster); ok {
			for i, name := range p.PostsTo() {
				for _, u := range g.Sinks {
					switch {
					case u.Name() != name:
					case u.PostedBy == "":
						u.PostedBy = n.Spec.Name
					case u.PostedBy != n.Spec.Name:
						errs = append(errs, schema.Error{Pos: n.Spec.PosOf("sinks", fmt.Sprint(i)), Msg: fmt.Sprintf("stages.%s.sinks[%d]: stage %s posts to %q already; one post stage per sink", n.Spec.Name, i, u.PostedBy, name)})
					}
				}
			}
		}
		if n.Kind.AfterRun {
			continue
		}
		for _, d := range n.Deps {
			if dn := g.byName[d]; dn != nil && dn.Kind.AfterRun {
				errs = append(errs, schema.Error{Pos: n.Spec.PosOf(n.Via[d]), Msg: fmt.Sprintf("stages.%s.%s: %s (kind %s) runs after every other stage, once the run is judged, so no stage can wait for it", n.Spec.Name, n.Via[d], d, dn.Kind.Name)})
			}
		}
	}
	return errs
}

// liveSinks are the sinks rows reach as they are measured: every sink
// but those a post stage drives.
func (g *Graph) liveSinks() []*SinkUse {
	var out []*SinkUse
	for _, u := range g.Sinks {
		if u.PostedBy == "" {
			out = append(out, u)
		}
	}
	return out
}

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
		if st := r.states[n.Spec.Name].status; st == StatusPending || st == StatusRunning {
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
	sum.Stages = slices.DeleteFunc(sum.Stages, func(s StageResult) bool {
		n := r.g.Node(s.Name)
		return n != nil && n.Kind.AfterRun
	})
	sum.Status = RunFailed
	switch {
	case sum.Interrupted:
		sum.Status = RunInterrupted
	case sum.ExitCode == ExitOK:
		sum.Status = RunOK
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
	var uses []*SinkUse
	for _, name := range names {
		i := slices.IndexFunc(r.g.Sinks, func(u *SinkUse) bool { return u.Name() == name })
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
			r.postRecords = slices.DeleteFunc(r.postRecords, func(o SinkRecord) bool { return o.Name == rec.Name })
			r.postRecords = append(r.postRecords, rec)
		}
	}
	return err
}

// sinkRecords are every sink's account for the manifest: the live ones',
// then the posted ones' (pending until their post stage ran).
func (r *runner) sinkRecords() []SinkRecord {
	out := r.sinks.records()
	r.postMu.Lock()
	defer r.postMu.Unlock()
	for _, u := range r.g.Sinks {
		if u.PostedBy == "" {
			continue
		}
		if i := slices.IndexFunc(r.postRecords, func(rec SinkRecord) bool { return rec.Name == u.Name() }); i >= 0 {
			out = append(out, r.postRecords[i])
			continue
		}
		out = append(out, SinkRecord{Name: u.Name(), Kind: u.Kind.Name, Required: !u.Optional, Status: SinkPending, Config: redact.Value(maps.Clone(u.Spec.Params))})
	}
	return out
}

func (r *runner) hasAfterRun() bool {
	return slices.ContainsFunc(r.g.Nodes, func(n *Node) bool { return n.Kind.AfterRun })
}
