package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
)

// emitter is a measuring test kind that emits two cell rows with requests,
// the second slower than the first.
type emitter struct{}

func (emitter) Validate(*pipeline.Check) error { return nil }

func (emitter) Run(ctx context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	for i, itl := range []float64{5, 50} {
		c := results.Cell{Stage: env.Stage.Name, CellID: env.Stage.Name + "/64:32/c" + string(rune('1'+i)), ISL: 64, OSL: 32,
			Concurrency: int64(i + 1), ITLP50Ms: results.Some(5.0), ITLP99Ms: results.Some(itl), Status: results.StatusOK, StartedAt: time.Now(),
			Metadata: map[string]string{"cell_note": "x"}}
		reqs := []results.Request{{Seq: 0, TTFTMs: results.Some(20.0)}, {Seq: 1, TTFTMs: results.Some(21.0)}}
		if err := env.Emit(c, results.AsRequests(reqs)); err != nil {
			return nil, err
		}
	}
	return &pipeline.Outputs{}, nil
}

// plain is an Output without optional capabilities.
type plain struct{ cells int }

func (p *plain) Name() string                              { return "plain" }
func (p *plain) Start(*pipeline.SinkEnv) error             { return nil }
func (p *plain) Stop(*pipeline.Summary) error              { return nil }
func (p *plain) Cell(results.Cell, results.Requests) error { p.cells++; return nil }

func TestEmitStampsIdentityAndHandsOutVerdicts(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	model := []byte("GGUF not really a model")
	if err := os.WriteFile(filepath.Join(dir, "model.gguf"), model, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(model)
	wantDigest := "sha256:" + hex.EncodeToString(sum[:])
	src := `name: "stamped"
model: {name: "m", file: "model.gguf"}
metadata: {quant: "Q4_K_M"}
assert: ["status == \"ok\""]
stages: {
	measure: {kind: "emit", assert: ["itl_p99_ms < 2*itl_p50_ms"]}
}
`
	reg := pipeline.NewRegistry()
	reg.AddKind(pipeline.Kind{Name: "emit", Doc: "test emitter", Measuring: true,
		Schema: schema.KindSchema{Def: "#Emit", Source: "package schema\n#Emit: {\n\t#StageBase\n\tkind: \"emit\"\n}\n"},
		New:    func(*schema.Stage) (pipeline.Stage, error) { return emitter{}, nil }})
	g := pipelinetest.LoadPlanFile(t, reg, filepath.Join(dir, "plan.cue"), src) // the model file beside it
	p := g.Plan
	pl := &plain{}
	capt := pipelinetest.Run(t, context.Background(), g, engine.Options{Sinks: pipelinetest.UseSinks(pl)})
	res, ri := capt.Summary, capt.Summary.Run
	if res.ExitCode != pipeline.ExitAssertion {
		t.Errorf("exit %d, want %d (the second cell fails its ITL assertion)", res.ExitCode, pipeline.ExitAssertion)
	}
	if len(capt.Cells) != 2 || pl.cells != 2 {
		t.Fatalf("the recording sink got %d cells, plain %d; want 2 each", len(capt.Cells), pl.cells)
	}
	for _, c := range capt.Cells {
		if c.RunID != ri.ID || c.Plan != "stamped" || c.ModelDigest != wantDigest || c.Hostname == "" || c.Hardware == "" || c.BenchrunVersion == "" {
			t.Errorf("cell %s identity: run %q plan %q digest %q host %q hw %q version %q", c.CellID, c.RunID, c.Plan, c.ModelDigest, c.Hostname, c.Hardware, c.BenchrunVersion)
		}
		if c.Metadata["quant"] != "Q4_K_M" || c.Metadata["cell_note"] != "x" {
			t.Errorf("cell %s metadata %v: want the plan's and the stage's", c.CellID, c.Metadata)
		}
	}
	capt.Cells[0].Metadata["quant"] = "changed"
	if capt.Cells[1].Metadata["quant"] != "Q4_K_M" || p.Metadata["quant"] != "Q4_K_M" {
		t.Error("cell rows share their metadata map with each other or with the plan")
	}
	for _, q := range capt.Requests {
		if q.RunID != ri.ID || q.Plan != "stamped" || q.Stage != "measure" || q.CellID == "" {
			t.Errorf("request identity: %+v", q)
		}
	}
	if len(capt.Verdicts) != 4 {
		t.Fatalf("%d verdict rows, want 2 cells × 2 assertions", len(capt.Verdicts))
	}
	outcomes := map[string]int{}
	for _, v := range capt.Verdicts {
		outcomes[v.Scope+"/"+v.Outcome]++
		if v.RunID != ri.ID || v.Plan != "stamped" || v.CellID == "" || v.Pos == "" || v.JudgedAt.IsZero() {
			t.Errorf("verdict identity: %+v", v)
		}
		if v.Outcome == results.OutcomeFail && (v.Values["itl_p99_ms"] != "50" || v.Passed) {
			t.Errorf("failed verdict %+v: want its values and passed=false", v)
		}
	}
	if outcomes["stage/pass"] != 1 || outcomes["stage/fail"] != 1 || outcomes["plan/pass"] != 2 {
		t.Errorf("outcomes %v, want stage/pass 1, stage/fail 1, plan/pass 2", outcomes)
	}
	a, b := capt.Cells[0].CellID, capt.Cells[1].CellID
	if want := []string{"start", "cell " + a, "verdicts " + a, "cell " + b, "verdicts " + b, "stop"}; !slices.Equal(capt.Calls, want) {
		t.Errorf("call order %v, want each cell's Cell then its Verdicts: %v", capt.Calls, want)
	}
}

// The run record names the model as served beside the plan's label: the
// file's name and the quantization its GGUF header gives, which need not
// be what the label says (here a label of Q4_K_M over an F32 file).
func TestRunRecordNamesTheServedModel(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	model, err := filepath.Abs("../../testdata/models/stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	plan := &schema.Plan{Name: "p", Model: schema.Model{Name: "llama-3.2-1b (Q4_K_M)", File: model}}
	run := pipeline.RunRecord(&pipeline.RunInfo{ID: "r", Plan: plan, StartedAt: time.Now()}, nil)
	if run.Model != "llama-3.2-1b (Q4_K_M)" || run.ModelFile != "stories260K.gguf" || run.ModelQuant != "F32" {
		t.Errorf("model %q, file %q, quant %q", run.Model, run.ModelFile, run.ModelQuant)
	}
	// A file that is not there (it lives on the serving machine) names nothing.
	plan.Model.File = filepath.Join(t.TempDir(), "elsewhere.gguf")
	if run := pipeline.RunRecord(&pipeline.RunInfo{ID: "r", Plan: plan}, nil); run.ModelFile != "" || run.ModelQuant != "" {
		t.Errorf("a missing file: %q %q", run.ModelFile, run.ModelQuant)
	}
}
