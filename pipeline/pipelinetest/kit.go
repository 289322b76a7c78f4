// Package pipelinetest is the test kit for stage kinds and sinks: it loads a plan
// from CUE text, runs it (or one stage of it) in a temporary run
// directory with a RecordingSink attached, and serves the built-in
// simulator on loopback over real HTTP. Any package's tests may import it
// (it imports pipeline, schema and internal/sim; no stage or sink, so a
// kind's own tests can use it without an import cycle: they pass the
// registry, with their kind in it).
//
// # Adding a stage kind
//
// A kind lives in stages/<kind>/ (schema.cue, config, New, Validate, Run)
// and is one line in stages/builtin.go (docs/DESIGN.md, "Stage
// contract"). Its tests build a registry with the kind (and whatever it
// needs) and run a plan through the real pipeline:
//
//	func TestMyKindEmitsRows(t *testing.T) {
//		url := pipelinetest.Sim(t)                      // the simulator, over HTTP
//		reg := pipeline.NewRegistry()
//		reg.AddKind(mykind.Kind)
//		rec := pipelinetest.RunStage(t, context.Background(), reg, fmt.Sprintf(`
//			name: "t"
//			model: {name: "sim-llama"}
//			stages: mine: {kind: "mykind", target: %q, assert: ["status == \"ok\""]}`, url), "mine")
//		if st := rec.Stage("mine"); st.Status != pipeline.StatusOK { t.Fatal(st.Reason) }
//		for _, c := range rec.Cells { ... }         // rows in the order the sinks got them
//		for _, v := range rec.Verdicts { ... }      // the assertions' verdicts
//	}
//
// RunStage cuts the plan down to the stage and what it needs (Graph.Only,
// as --only does), so a plan copied from plans/ runs as far as the stage
// under test. LoadPlan alone gives the graph for vet-time tests
// (g.Check(name), g.Node(name).Stage.Validate).
//
// # Adding a sink
//
// A sink lives in sinks/<kind>/ (sinks/<kind>sink/ when the standard
// library has a package of the kind's name; schema.cue, New, the
// pipeline.Sink methods) and is one line in sinks/builtin.go (see
// pipeline/sinks.go for the contract: a sink learns everything through
// its calls and never reads another sink's files). Registering it is enough for the sink
// conformance test (sinks/conformance_test.go) to cover it: it runs a real
// sweep against the simulator live through every registered non-durable
// sink, then replays the run directory (as `benchrun report RUN_DIR`
// does) and requires the sink's files to come out byte-identical, also
// after a run that failed half way and was resumed, and with --output
// PREFIX when the sink takes the prefix flag. A sink that writes the time
// it wrote a file, or appends on replay, fails it. Its own tests drive it
// by hand (LiveEnv) or through a run:
//
//	reg := pipeline.NewRegistry()
//	stages.Builtin(reg)
//	reg.AddSink(mysink.Kind)
//	rec := pipelinetest.RunStage(t, ctx, reg, src, "sweep")   // src lists `sinks: [{kind: "mysink"}]`
//	b, _ := os.ReadFile(filepath.Join(rec.Dir, "my-output.txt"))
package pipelinetest

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/testkit"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/schema"
)

// LoadPlan writes src to plan.cue in a new temporary directory, loads it
// with reg's kinds and sinks, and builds its graph. Every schema or graph
// error fails the test, with the plan's text beside them.
func LoadPlan(t testing.TB, reg *pipeline.Registry, src string) *pipeline.Graph {
	t.Helper()
	return LoadPlanFile(t, reg, filepath.Join(t.TempDir(), "plan.cue"), src)
}

// LoadPlanFile is LoadPlan writing the plan to path, for a plan whose
// files sit beside it (a model file, a dataset) or a test that loads the
// plan of one directory again (a resume, an edited plan).
func LoadPlanFile(t testing.TB, reg *pipeline.Registry, path, src string) *pipeline.Graph {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := schema.Load(path, reg.LoadOptions(nil))
	if err != nil {
		t.Fatalf("loading the plan:\n%v\n--- %s ---\n%s", err, path, src)
	}
	g, err := pipeline.Build(p, reg)
	if err != nil {
		t.Fatalf("building the plan's graph:\n%v\n--- %s ---\n%s", err, path, src)
	}
	return g
}

// RunStage loads src, cuts it down to the stage named stage and what it
// needs (Graph.Only, as --only does), and runs it in a new run directory
// under a temporary folder, with a RecordingSink attached beside the
// registry's sinks. The Recording holds what that sink received, the
// summary and the run directory. A run that cannot be carried out at all
// (engine.Run's error: a refused plan, a sink that could not start)
// fails the test; a stage that fails is in the summary.
func RunStage(t testing.TB, ctx context.Context, reg *pipeline.Registry, src, stage string) *Recording {
	t.Helper()
	g, err := LoadPlan(t, reg, src).Only([]string{stage})
	if err != nil {
		t.Fatalf("--only %s: %v", stage, err)
	}
	return Run(t, ctx, g, engine.Options{})
}

// Run runs g in a new run directory (under runs/ of a temporary folder)
// with a RecordingSink attached after opts.Sinks. Progress goes to
// Recording.Progress (and to opts.Progress when set); FinallyTimeout is 5s
// unless opts says. engine.Run's error fails the test.
func Run(t testing.TB, ctx context.Context, g *pipeline.Graph, opts engine.Options) *Recording {
	t.Helper()
	ri, err := engine.NewRunInfo(filepath.Join(t.TempDir(), "runs"), g.Plan, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return runWith(t, ctx, g, ri, opts)
}

func runWith(t testing.TB, ctx context.Context, g *pipeline.Graph, ri *pipeline.RunInfo, opts engine.Options) *Recording {
	t.Helper()
	rs := NewRecordingSink()
	progress := &syncBuffer{}
	var w io.Writer = progress
	if opts.Progress != nil {
		w = io.MultiWriter(progress, opts.Progress)
	}
	opts.Progress = w
	opts.Sinks = append(append([]*pipeline.SinkUse{}, opts.Sinks...), UseSink(rs))
	if opts.FinallyTimeout <= 0 {
		opts.FinallyTimeout = 5 * time.Second
	}
	sum, err := engine.Run(ctx, g, ri, opts)
	if err != nil {
		t.Fatalf("run: %v\nprogress:\n%s", err, progress.String())
	}
	rec := rs.Snapshot()
	rec.Summary, rec.Dir, rec.Progress = sum, ri.Dir, progress.String()
	return rec
}

// syncBuffer is the tests' synchronized buffer (testkit).
type syncBuffer = testkit.SyncBuffer
