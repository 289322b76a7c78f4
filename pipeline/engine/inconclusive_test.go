package engine_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/sinks"
)

// The rows kind emits the rows its plan gives, as a sweep emits measured
// cells: what the machine did is in each row (machine_late_p99_ms), so
// these tests decide exactly how late the machine was. It measures a cell
// once more when Env.Confirm asks, with the row's `again` values.
const scriptedKind = `
#Scripted: {
	#StageBase
	kind: "scripted"
	rows: [...#ScriptedRow]
}
#ScriptedRow: {
	ttft: number
	e2el: *90 | number
	late: *0 | number
	again?: {
		ttft: number
		e2el: *90 | number
		late: *0 | number
	}
}
`

type scriptedValues struct {
	TTFT float64 `json:"ttft"`
	E2EL float64 `json:"e2el"`
	Late float64 `json:"late"`
}

type scriptedConfig struct {
	Rows []struct {
		scriptedValues
		Again *scriptedValues `json:"again"`
	} `json:"rows"`
}

type scriptedStage struct {
	name string
	cfg  scriptedConfig
	// confirmed counts the cells Env.Confirm asked to measure again.
	confirmed *int
}

func (s *scriptedStage) Validate(*pipeline.Check) error { return nil }

func (s *scriptedStage) Run(ctx context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	for i, r := range s.cfg.Rows {
		c := rowOf(s.name, i, r.scriptedValues, 1)
		if env.CellDone(c.CellID) {
			continue // a resume measures only what is not done
		}
		if err := env.Emit(c, nil); err != nil {
			return nil, err
		}
		if !env.Confirm(c) {
			continue
		}
		*s.confirmed++
		again := r.scriptedValues
		if r.Again != nil {
			again = *r.Again
		}
		if err := env.Emit(rowOf(s.name, i, again, 2), nil); err != nil {
			return nil, err
		}
	}
	return &pipeline.Outputs{}, nil
}

func rowOf(stage string, i int, v scriptedValues, measurement int64) results.Cell {
	c := results.Cell{
		Stage: stage, CellID: fmt.Sprintf("%s/64:32/c%d", stage, i+1), ISL: 64, OSL: 32, Concurrency: int64(i + 1),
		Measurement: measurement, Status: results.StatusOK, Requests: 8, Completed: 8, StartedAt: time.Now().UTC(), DurationS: 1,
		TTFTMs: results.Some(v.TTFT), TTFTP50Ms: results.Some(v.TTFT), E2ELMs: results.Some(v.E2EL), E2ELP50Ms: results.Some(v.E2EL),
	}
	if v.Late > 0 {
		c.MachineLateP99Ms = results.Some(v.Late)
	}
	return c
}

func scriptedRegistry(confirmed *int) *pipeline.Registry {
	reg := pipeline.NewRegistry()
	reg.AddKind(pipeline.Kind{Name: "scripted", Doc: "scripted rows", Measuring: true,
		Schema: schema.KindSchema{Def: "#Scripted", Source: "package schema\n" + scriptedKind},
		New: func(s *schema.Stage) (pipeline.Stage, error) {
			st := &scriptedStage{name: s.Name, confirmed: confirmed}
			return st, s.Decode(&st.cfg)
		}})
	sinks.Builtin(reg)
	return reg
}

// TestInconclusiveVerdicts: a check that fails by less than the machine's
// lateness during the cell could explain is measured once more; judged
// on the second measurement it passes, fails or is inconclusive, never
// pass in disguise. A failure larger than the lateness fails at once, and
// a failure the machine cannot explain on the first measurement counts
// whatever the second says. Every row reaches the CSV with its
// measurement, and the assertions table keeps both judgings.
func TestInconclusiveVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name         string
		rows         string
		policy       string // the plan's inconclusive
		asserts      string // the stage's assert list; "" for the two checks below
		exit         int
		confirmed    int
		failed       int
		inconclusive int
		outcomes     []string // the assertions table's (outcome, measurement), in order
	}{
		{
			name: "explained, then passes", rows: `{ttft: 43.2, late: 7.1, again: {ttft: 38, late: 0.1}}`,
			exit: 0, confirmed: 1, outcomes: []string{"inconclusive 1", "pass 2"},
		},
		{
			name: "explained twice: inconclusive, tolerated", rows: `{ttft: 43.2, late: 7.1, again: {ttft: 44, late: 6}}`,
			exit: 0, confirmed: 1, inconclusive: 1, outcomes: []string{"inconclusive 1", "inconclusive 2"},
		},
		{
			name: "explained twice, the plan fails on it", rows: `{ttft: 43.2, late: 7.1, again: {ttft: 44, late: 6}}`, policy: "fail",
			exit: pipeline.ExitInconclusive, confirmed: 1, inconclusive: 1, outcomes: []string{"inconclusive 1", "inconclusive 2"},
		},
		{
			name: "explained, then a miss the machine cannot explain", rows: `{ttft: 43.2, late: 7.1, again: {ttft: 55, late: 0.2}}`,
			exit: pipeline.ExitAssertion, confirmed: 1, failed: 1, outcomes: []string{"inconclusive 1", "fail 2"},
		},
		{
			// A warning never changes the exit code, inconclusive or not,
			// whatever the plan's inconclusive says (it exited 5).
			name: "an inconclusive warning, the plan fails on inconclusive", rows: `{ttft: 43.2, late: 7.1}`, policy: "fail",
			asserts: `[{expr: "ttft_ms < 40", severity: "warn"}, "e2el_ms < 100"]`,
			exit:    0, outcomes: []string{"inconclusive 1"},
		},
		{
			name: "a miss larger than the lateness fails at once", rows: `{ttft: 60, late: 7.1}`,
			exit: pipeline.ExitAssertion, failed: 1, outcomes: []string{"fail 1"},
		},
		{
			name: "a quiet machine explains nothing", rows: `{ttft: 40.5}`,
			exit: pipeline.ExitAssertion, failed: 1, outcomes: []string{"fail 1"},
		},
		{
			// The second check is explained and re-measured; the first
			// failed on measurement 1 with nothing to explain it, and still
			// fails the run when the second measurement passes it.
			name: "a first measurement's unexplained failure stands", rows: `{ttft: 50, e2el: 101, late: 2, again: {ttft: 30, e2el: 90}}`,
			exit: pipeline.ExitAssertion, confirmed: 1, failed: 1, outcomes: []string{"fail 1", "inconclusive 1", "pass 2"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			confirmed := 0
			reg := scriptedRegistry(&confirmed)
			policy := ""
			if tc.policy != "" {
				policy = fmt.Sprintf("inconclusive: %q\n", tc.policy)
			}
			asserts := tc.asserts
			if asserts == "" {
				asserts = `["ttft_ms < 40", "e2el_ms < 100"]`
			}
			src := `name: "inc"
` + policy + `stages: m: {kind: "scripted", rows: [` + tc.rows + `], assert: ` + asserts + `}
`
			var stdout, progress bytes.Buffer
			dir := t.TempDir()
			sum, ri := runPlan(t, context.Background(), dir, reg, src, engine.Options{Stdout: &stdout, Progress: &progress})
			if sum.ExitCode != tc.exit || confirmed != tc.confirmed || len(sum.Failed) != tc.failed || len(sum.Inconclusive) != tc.inconclusive {
				t.Errorf("exit %d, %d re-measured, %d failed, %d inconclusive; want %d, %d, %d, %d\n%s",
					sum.ExitCode, confirmed, len(sum.Failed), len(sum.Inconclusive), tc.exit, tc.confirmed, tc.failed, tc.inconclusive, progress.String())
			}
			for _, v := range sum.Inconclusive {
				if !strings.Contains(v.Explained, "the machine ran an event loop's tasks up to") || !strings.Contains(v.Explained, "the check failed by") {
					t.Errorf("inconclusive without its reason in numbers: %q", v.Explained)
				}
			}
			// The assertions table: every judging, with its measurement.
			vs, err := resultstest.ReadTable[results.Verdict](ri.Dir, results.TableAssertions)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range vs {
				if v.Assertion == "e2el_ms < 100" && v.Outcome == results.OutcomePass {
					continue // the second check, where it passes
				}
				got = append(got, fmt.Sprintf("%s %d", v.Outcome, v.Measurement))
			}
			if strings.Join(got, ",") != strings.Join(tc.outcomes, ",") {
				t.Errorf("assertions table: %v; want %v", got, tc.outcomes)
			}
			// The CSV: one row per measurement, told apart.
			rows, err := csv.NewReader(&stdout).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			col := map[string]int{}
			for i, name := range rows[0] {
				col[name] = i
			}
			var ms []string
			for _, r := range rows[1:] {
				ms = append(ms, r[col["measurement"]])
				if r[col["measurement"]] == "2" && !strings.HasPrefix(r[col["notes"]], "measurement 2 of the cell, the one its checks judge: measured once more (") {
					t.Errorf("the second row's notes do not say why it was measured again: %q", r[col["notes"]])
				}
			}
			want := []string{"1"}
			if tc.confirmed > 0 {
				want = append(want, "2")
			}
			if strings.Join(ms, ",") != strings.Join(want, ",") {
				t.Errorf("CSV measurements %v, want %v", ms, want)
			}
			engine.PrintSummary(&progress, sum)
			if tc.inconclusive > 0 && !strings.Contains(progress.String(), "INCONCLUSIVE "+filepath.Join(dir, "plan.cue")) {
				t.Errorf("the summary does not list the inconclusive check at its position:\n%s", progress.String())
			}
		})
	}
}

// TestResumeKeepsVerdictsAsJudged: a resume of a run whose cells are all
// done judges nothing again and keeps each earlier verdict as it was: a
// warning stays a warning and an inconclusive check stays inconclusive
// (the run was 0 and stays 0; a resume counted both as failed, exit 1),
// and under inconclusive: "fail" the inconclusive one exits 5, not 1.
func TestResumeKeepsVerdictsAsJudged(t *testing.T) {
	for _, tc := range []struct {
		policy string
		exit   int
	}{{"tolerate", pipeline.ExitOK}, {"fail", pipeline.ExitInconclusive}} {
		t.Run(tc.policy, func(t *testing.T) {
			confirmed := 0
			reg := scriptedRegistry(&confirmed)
			src := `name: "inc"
inconclusive: "` + tc.policy + `"
stages: m: {kind: "scripted", rows: [{ttft: 60}, {ttft: 30, e2el: 101, late: 7.1, again: {ttft: 30, e2el: 102, late: 6}}]
	assert: [{expr: "ttft_ms < 40", severity: "warn"}, "e2el_ms < 100"]}
`
			dir := t.TempDir()
			var progress bytes.Buffer
			sum, ri := runPlan(t, context.Background(), dir, reg, src, engine.Options{Stdout: io.Discard, Progress: &progress})
			if sum.ExitCode != tc.exit || len(sum.Failed) != 0 || len(sum.Inconclusive) != 1 {
				t.Fatalf("first attempt: exit %d, %d failed, %d inconclusive; want %d, 0, 1\n%s", sum.ExitCode, len(sum.Failed), len(sum.Inconclusive), tc.exit, progress.String())
			}
			ri.Close()
			ri2, err := engine.ResumeRunInfo(ri.Dir, ri.Plan, nil, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			progress.Reset()
			g := pipelinetest.LoadPlanFile(t, reg, filepath.Join(dir, "plan.cue"), src)
			sum, err = engine.Run(context.Background(), g, ri2, engine.Options{Stdout: io.Discard, Progress: &progress})
			if err != nil {
				t.Fatal(err)
			}
			if sum.ExitCode != tc.exit || len(sum.Failed) != 0 || len(sum.Inconclusive) != 1 || confirmed != 1 {
				t.Errorf("resumed: exit %d, %d failed, %d inconclusive, %d re-measured in all; want %d, 0, 1, 1\n%s", sum.ExitCode, len(sum.Failed), len(sum.Inconclusive), confirmed, tc.exit, progress.String())
			}
			m, err := rundir.ReadManifest(ri.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]string{true: rundir.RunOK, false: rundir.RunFailed}[tc.exit == 0]; m.Status != want {
				t.Errorf("manifest after the resume: %s, want %s", m.Status, want)
			}
		})
	}
}
