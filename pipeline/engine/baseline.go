package engine

import (
	"os"
	"path/filepath"

	"github.com/benchrun/benchrun/internal/regress"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/judge"
	"github.com/benchrun/benchrun/schema"
)

// baselineRoot is where the history of a run is looked for: the plan's
// baseline.runs (relative to the plan file when it is there, else to the
// working directory), --baseline over it, or the folder the run itself
// was filed under.
func (r *runner) baselineRoot(b *schema.Baseline) string {
	root := b.Runs
	if r.opts.Baseline != "" {
		root = r.opts.Baseline
	}
	if root == "" {
		if r.historyRoot != "" {
			return r.historyRoot // a merged run's: where its shards were filed
		}
		// runs/plan=NAME/date=D/run=ID: the runs folder is three up.
		return filepath.Dir(filepath.Dir(filepath.Dir(r.ri.Dir)))
	}
	if !filepath.IsAbs(root) && r.opts.Baseline == "" && r.g.Plan.Path != "" {
		if p := filepath.Join(filepath.Dir(r.g.Plan.Path), root); exists(p) {
			return p
		}
	}
	return root
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// loadHistory opens the baseline history when the plan has a baseline
// (or --baseline gives one); nil without.
func (r *runner) loadHistory() *judge.History {
	b := r.g.Plan.Baseline
	if b == nil && r.opts.Baseline != "" {
		b = &schema.Baseline{}
	}
	if b == nil {
		return nil
	}
	var sendLag map[string]float64
	if pj, err := resolvedPlanText(r.g.Plan); err == nil {
		sendLag = regress.SendLagThresholds(pj)
	}
	return judge.OpenHistory(b, r.baselineRoot(b), r.g.Plan.Name, r.ri.ID, sendLag)
}

// newJudge makes the run's judge: the graph's assertions, the baseline
// history, and the verdicts of earlier attempts that still count.
func (r *runner) newJudge() *judge.Judge {
	asserts, runAsserts := r.g.Assertions()
	var measuring []string
	for _, n := range r.g.Nodes {
		if n.Kind.Measuring {
			measuring = append(measuring, n.Spec.Name)
		}
	}
	return judge.New(judge.Config{
		Run:     judge.RunInfo{ID: r.ri.ID, Plan: r.g.Plan.Name, Dir: r.ri.Dir, StartedAt: pipeline.RunRecord(r.ri, nil).StartedAt, Attempt: r.attempt()},
		Asserts: asserts, RunAsserts: runAsserts, Measuring: measuring,
		History: r.loadHistory(), Failed: stateOf(r.ri).priorFailed, Inconclusive: stateOf(r.ri).priorInconclusive,
		Progress: r.opts.Progress,
	})
}
