package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/sinks/parquet"
)

// rowsStage is a measuring stage that emits a row per value, with one
// request each (e2el = the value).
type rowsStage struct{ cfg struct{ Values []float64 } }

func (rowsStage) Validate(*pipeline.Check) error { return nil }
func (s rowsStage) Run(ctx context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	for i, v := range s.cfg.Values {
		c := results.Cell{Stage: env.Stage.Name, CellID: fmt.Sprintf("%s/16:8/c%d", env.Stage.Name, i+1), ISL: 16, OSL: 8,
			Concurrency: int64(i + 1), Status: results.StatusOK, Requests: 1, Completed: 1, DecodeTokS: results.Some(v)}
		req := results.Request{Status: results.StatusOK, E2ELMs: results.Some(v), TTFTMs: results.Some(1.0)}
		if err := env.Emit(c, results.AsRequests([]results.Request{req})); err != nil {
			return nil, err
		}
	}
	return &pipeline.Outputs{}, nil
}

const judgePlan = `name: "jd"
model: {name: "m"}
scale: *1 | number @tag(scale, type=number)
baseline: {min_runs: 2, metrics: ["decode_tok_s"]}
assert: ["len(stages.a.rows) + len(stages.b.rows) == 5"]
stages: {
	a: {kind: "rows", values: [100 * scale, 200 * scale, 300 * scale], assert: [
		"decode_tok_s > 60",
		"p(requests.e2el_ms, 50) < 350",
		"max(map(rows, .decode_tok_s)) > 100",
		{expr: "all(rows, .decode_tok_s > 150)", severity: "warn"},
	]}
	b: {kind: "rows", needs: ["a"], values: [50, 60]}
}
`

func judgeRegistry() *pipeline.Registry {
	reg := pipeline.NewRegistry()
	reg.AddKind(pipeline.Kind{Name: "rows", Doc: "emits rows", Measuring: true,
		Schema: schema.KindSchema{Def: "#Rows", Source: "package schema\n#Rows: {#StageBase, kind: \"rows\", values: [...number]}"},
		New: func(s *schema.Stage) (pipeline.Stage, error) {
			st := rowsStage{}
			return st, s.Decode(&st.cfg)
		}})
	return reg
}

// verdictKey is what a verdict says, without when it was judged.
func verdictKey(v results.Verdict) string {
	keys := make([]string, 0, len(v.Values))
	for k, x := range v.Values {
		if k != "runs" { // regression: the history's run ids, the same runs
			keys = append(keys, k+"="+x)
		}
	}
	sort.Strings(keys)
	return strings.Join([]string{v.Stage, v.CellID, v.Level, v.Assertion, v.Severity, v.Scope, v.Outcome, v.Error, strings.Join(keys, " ")}, "|")
}

// TestJudgeDirJudgesAsTheRunDid: JudgeDir on a finished run's directory
// gives the verdicts the run gave at its end, at every level (row with
// requests, stage, run, warn, regression against the history), and the
// same outcome.
func TestJudgeDirJudgesAsTheRunDid(t *testing.T) {
	dir := t.TempDir()
	reg := judgeRegistry()
	runs := filepath.Join(dir, "runs")
	var last *pipeline.RunInfo
	var live *pipeline.Summary
	for i, scale := range []string{"1", "1", "0.5"} {
		pipelinetest.LoadPlanFile(t, reg, filepath.Join(dir, "plan.cue"), judgePlan)
		p, err := schema.Load(filepath.Join(dir, "plan.cue"), reg.LoadOptions([]string{"scale=" + scale}))
		if err != nil {
			t.Fatal(err)
		}
		g := mustBuild(t, p, reg)
		ri, err := engine.NewRunInfo(runs, g.Plan, []string{"scale=" + scale}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		sum, err := engine.Run(context.Background(), g, ri, engine.Options{Sinks: pipelinetest.UseSinks(parquet.New())})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		last, live = ri, sum
		time.Sleep(20 * time.Millisecond) // runs start in order
	}
	if live.ExitCode != pipeline.ExitAssertion {
		t.Fatalf("the live run exits %d (%s), want 1", live.ExitCode, live.Reason)
	}
	run, err := rundir.Open(last.Dir)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := run.Verdicts()
	if err != nil {
		t.Fatal(err)
	}
	var judged []results.Verdict
	g := mustBuild(t, last.Plan, reg)
	sum, err := engine.JudgeDir(context.Background(), g, last.Dir, engine.JudgeOptions{
		Store: func(rows []results.Verdict) error { judged = rows; return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	levels := map[string]bool{}
	for _, v := range stored {
		want = append(want, verdictKey(v))
		levels[v.Level+"/"+v.Outcome] = true
	}
	for _, v := range judged {
		got = append(got, verdictKey(v))
		if v.RunID != last.ID {
			t.Errorf("verdict of run %q, want %q", v.RunID, last.ID)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		t.Errorf("judged verdicts differ from the run's:\nrun's:\n  %s\njudged:\n  %s", strings.Join(want, "\n  "), strings.Join(got, "\n  "))
	}
	for _, l := range []string{"row/pass", "row/fail", "stage/pass", "stage/warn", "run/pass", "regression/regressed"} {
		if !levels[l] {
			t.Errorf("the run has no %s verdict, which this test means to compare: %v", l, levels)
		}
	}
	if sum.ExitCode != live.ExitCode || len(sum.Failed) != len(live.Failed) || len(sum.Verdicts) != len(live.Verdicts) {
		t.Errorf("judged: exit %d, %d failed of %d; the run: exit %d, %d failed of %d", sum.ExitCode, len(sum.Failed), len(sum.Verdicts), live.ExitCode, len(live.Failed), len(live.Verdicts))
	}
	m, err := rundir.ReadManifest(last.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != rundir.RunFailed || m.ExitCode == nil || *m.ExitCode != pipeline.ExitAssertion || len(m.Verdicts) != len(live.Failed) {
		t.Errorf("manifest after judging: %s exit %v, %d failed checks; want failed, 1, %d", m.Status, m.ExitCode, len(m.Verdicts), len(live.Failed))
	}
}
