package engine_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
)

// oneRowStage is a measuring stage that emits one ok row.
type oneRowStage struct{}

func (oneRowStage) Validate(*pipeline.Check) error { return nil }
func (oneRowStage) Run(ctx context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	return &pipeline.Outputs{}, env.Emit(results.Cell{Stage: env.Stage.Name, CellID: env.Stage.Name + "/1", Status: results.StatusOK}, nil)
}

// recordingOutput keeps the rows it was given; fail makes every row fail
// to store (a full disk).
type recordingOutput struct {
	name string
	fail bool
	rows []results.Cell
}

func (o *recordingOutput) Name() string                  { return o.name }
func (o *recordingOutput) Start(*pipeline.SinkEnv) error { return nil }
func (o *recordingOutput) Stop(*pipeline.Summary) error  { return nil }
func (o *recordingOutput) Cell(c results.Cell, _ results.Requests) error {
	if o.fail {
		return errors.New("write cells/part-001-00001.parquet: no space left on device")
	}
	o.rows = append(o.rows, c)
	return nil
}

// A row that did not reach the durable output is never shown as stored:
// the CSV and result.json get it marked "not stored", after the durable
// output was tried (whatever the outputs' order), and the run says which
// output lost it and does not exit 0.
func TestARowNotStoredIsNotReportedAsStored(t *testing.T) {
	reg := pipeline.NewRegistry()
	reg.AddKind(pipeline.Kind{Name: "emit", Doc: "emits a row", Measuring: true,
		Schema: schema.KindSchema{Def: "#Emit", Source: "package schema\n#Emit: {#StageBase, kind: \"emit\"}"},
		New:    func(*schema.Stage) (pipeline.Stage, error) { return oneRowStage{}, nil }})
	csv := &recordingOutput{name: "csv"}
	parquet := &recordingOutput{name: "parquet", fail: true}
	// Durability is the sink kind's, given after the CSV on purpose.
	durable := &pipeline.SinkUse{Kind: pipeline.SinkKind{Name: "parquet", Durable: true}, Sink: parquet}
	sum, _ := runPlan(t, context.Background(), t.TempDir(), reg, "name: \"p\"\nmodel: {name: \"m\"}\nstages: e: {kind: \"emit\"}\n",
		engine.Options{Sinks: []*pipeline.SinkUse{pipelinetest.UseSink(csv), durable}, Progress: os.Stderr})
	if len(csv.rows) != 1 {
		t.Fatalf("csv got %d rows", len(csv.rows))
	}
	if r := csv.rows[0]; r.Status != results.StatusError || !strings.Contains(r.Reason, "not stored (parquet: write cells/part-001-00001.parquet: no space left on device)") {
		t.Fatalf("csv row: %s %q", r.Status, r.Reason)
	}
	if sum.ExitCode == pipeline.ExitOK || !strings.Contains(sum.Reason, "parquet") {
		t.Fatalf("exit %d: %q", sum.ExitCode, sum.Reason)
	}
}
