package sweep_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/stages/sweep"
)

// repeats: N measures every cell × ladder point N times, each its own row
// (…/repN, column repeat), the whole ladder once per repeat so drift
// spreads over every point; each repeat's speedup is against the c=1 row
// of the same repeat.
func TestRepeatsInterleaveTheLadder(t *testing.T) {
	url := pipelinetest.Sim(t)
	reg := pipeline.NewRegistry()
	reg.AddKind(sweep.Kind)
	rec := pipelinetest.RunStage(t, context.Background(), reg, fmt.Sprintf(`
name: "rep"
model: {name: "sim-llama"}
stages: sweep: {kind: "sweep", target: %q, cells: [{isl: 16, osl: 4}], concurrency: [1, 2], requests: 2, warmup: 0, repeats: 3}`, url), "sweep")
	if st := rec.Stage("sweep"); st.Status != pipeline.StatusOK {
		t.Fatalf("sweep %s: %s", st.Status, st.Reason)
	}
	var got []string
	for _, c := range rec.Cells {
		got = append(got, fmt.Sprintf("%s=%d", c.CellID, c.Repeat))
		if c.Concurrency == 2 && c.SpeedupVsC1 == nil {
			t.Errorf("%s has no speedup against its repeat's c=1 row", c.CellID)
		}
	}
	want := "[sweep/16:4/c1/rep1=1 sweep/16:4/c2/rep1=1 sweep/16:4/c1/rep2=2 sweep/16:4/c2/rep2=2 sweep/16:4/c1/rep3=3 sweep/16:4/c2/rep3=3]"
	if fmt.Sprint(got) != want {
		t.Fatalf("rows %v\nwant %s", got, want)
	}
}
