package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
)

// Build compiles every assertion once and the run judges with those: the
// plan's row assertion is one compiled program shared by every measuring
// stage (none for a stage that measures nothing), a run-level one is
// judged once, and --only keeps the plan's run-level assertions.
func TestAssertionsCompiledOnce(t *testing.T) {
	reg := graphRegistry()
	g := pipelinetest.LoadPlanFile(t, reg, filepath.Join(t.TempDir(), "plan.cue"), `name: "once"
assert: ["ttft_ms < 100", "len(stages.a.rows) > 0"]
stages: {
	a: {kind: "cells", ids: ["x"], assert: ["len(rows) > 0", "len(stages.b.rows) >= 0"]}
	b: {kind: "cells", ids: ["y"]}
	k: {kind: "knob"}
}`)
	byStage, run := g.Assertions()
	exprs := func(as []*pipeline.Assertion) string {
		var out []string
		for _, a := range as {
			out = append(out, a.Level+":"+a.Stage+":"+a.Expr)
		}
		return strings.Join(out, " | ")
	}
	if got, want := exprs(byStage["a"]), "stage:a:len(rows) > 0 | row::ttft_ms < 100"; got != want {
		t.Errorf("stage a judges %q, want %q", got, want)
	}
	if got, want := exprs(byStage["b"]), "row::ttft_ms < 100"; got != want {
		t.Errorf("stage b judges %q, want %q", got, want)
	}
	if len(byStage["k"]) != 0 {
		t.Errorf("stage k measures nothing but judges %q", exprs(byStage["k"]))
	}
	if byStage["a"][1] != byStage["b"][0] {
		t.Error("the plan's row assertion was compiled once per stage, not once")
	}
	if got, want := exprs(run), "run:a:len(stages.b.rows) >= 0 | run::len(stages.a.rows) > 0"; got != want {
		t.Errorf("run-level assertions %q, want %q", got, want)
	}
	only, err := g.Only([]string{"b"})
	if err != nil {
		t.Fatal(err)
	}
	byStage, run = only.Assertions()
	if got, want := exprs(byStage["b"]), "row::ttft_ms < 100"; got != want || len(byStage) != 1 {
		t.Errorf("--only b judges %v, want b: %q", byStage, want)
	}
	if got, want := exprs(run), "run::len(stages.a.rows) > 0"; got != want {
		t.Errorf("--only b's run-level assertions %q, want %q", got, want)
	}
}

// A plan-level assertion that does not compile is refused at vet even
// when no stage measures (it used to be compiled only per measuring stage).
func TestPlanAssertionCompiledWithoutMeasuringStage(t *testing.T) {
	reg := graphRegistry()
	path := filepath.Join(t.TempDir(), "plan.cue")
	src := `name: "bad"
assert: ["ttft_mss < 100"]
stages: {k: {kind: "knob"}}`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := schema.Load(path, reg.LoadOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	_, err = pipeline.Build(p, reg)
	if err == nil || !strings.Contains(err.Error(), "ttft_mss") || !strings.Contains(err.Error(), "plan.cue:2:") {
		t.Fatalf("a misspelt plan assertion with no measuring stage: err %v, want it named at plan.cue:2", err)
	}
}

// graphRegistry has the two kinds the graph's tests plan with: cells, a
// measuring kind that lists its cell names, and knob, which measures
// nothing. Neither is run here.
func graphRegistry() *pipeline.Registry {
	const kinds = `
#Cells: {
	#StageBase
	kind: "cells"
	ids: [...string]
}
#Knob: {
	#StageBase
	kind: "knob"
}
`
	reg := pipeline.NewRegistry()
	reg.AddKind(pipeline.Kind{Name: "cells", Measuring: true, Schema: schema.KindSchema{Def: "#Cells", Source: "package schema\n" + kinds},
		New: func(s *schema.Stage) (pipeline.Stage, error) { return idleStage{}, nil }})
	reg.AddKind(pipeline.Kind{Name: "knob", Schema: schema.KindSchema{Def: "#Knob", Source: "package schema\n"},
		New: func(s *schema.Stage) (pipeline.Stage, error) { return idleStage{}, nil }})
	return reg
}

// idleStage is a stage the graph's tests build and never run.
type idleStage struct{}

func (idleStage) Validate(*pipeline.Check) error { return nil }
func (idleStage) Run(context.Context, *pipeline.Env) (*pipeline.Outputs, error) {
	return &pipeline.Outputs{}, nil
}
