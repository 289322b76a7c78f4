package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/internal/testkit"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
)

// zeros512MiB is `head -c 536870912 /dev/zero | sha256sum`: the digest of
// the sparse model files these tests make.
const zeros512MiB = "sha256:9acca8e8c22201155389f65abbf6bc9723edc7384ead80503839f49dcc56d767"

const digestKinds = `package schema
#MkFile: {
	#StageBase
	kind: "mkfile"
	path: string
}
#DMeasure: {
	#StageBase
	kind: "dmeasure"
}
`

// digestClock records when the model file's hash ended and when the
// measuring stage started.
type digestClock struct {
	mu       sync.Mutex
	hashed   []time.Time
	measured time.Time
}

// mkfile makes a 512 MiB sparse file (a model a launch stage downloads).
type mkfile struct{ path string }

func (mkfile) Validate(*pipeline.Check) error { return nil }

func (m mkfile) Run(_ context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	path := filepath.Join(filepath.Dir(env.Plan.Path), m.path)
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return &pipeline.Outputs{}, f.Truncate(512 << 20)
}

// dmeasure notes when it starts and emits one cell row.
type dmeasure struct{ clock *digestClock }

func (dmeasure) Validate(*pipeline.Check) error { return nil }

func (d dmeasure) Run(_ context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	d.clock.mu.Lock()
	d.clock.measured = time.Now()
	d.clock.mu.Unlock()
	c := results.Cell{Stage: env.Stage.Name, CellID: env.Stage.Name + "/8:8/c1", ISL: 8, OSL: 8, Concurrency: 1, Status: results.StatusOK, StartedAt: time.Now()}
	return &pipeline.Outputs{}, env.Emit(c, nil)
}

// lockedBuffer is the tests' synchronized buffer (testkit).
type lockedBuffer = testkit.SyncBuffer

// runDigestPlan runs a plan with the digest test kinds and checks that the
// model file was hashed once, before the measuring stage started, with the
// progress shown and the digest on the row and in the manifest.
func runDigestPlan(t *testing.T, dir, src string) {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // no digest cached from an earlier run
	clock := &digestClock{}
	engine.SetDigestHooks(t, func(string, string) {
		clock.mu.Lock()
		clock.hashed = append(clock.hashed, time.Now())
		clock.mu.Unlock()
	}, 0)
	reg := pipeline.NewRegistry()
	reg.AddKind(pipeline.Kind{Name: "mkfile", Doc: "makes a sparse file",
		Schema: schema.KindSchema{Def: "#MkFile", Source: digestKinds},
		New: func(s *schema.Stage) (pipeline.Stage, error) {
			var cfg struct {
				Path string `json:"path"`
			}
			return mkfile{path: cfg.Path}, s.Decode(&cfg)
		}})
	reg.AddKind(pipeline.Kind{Name: "dmeasure", Doc: "measures nothing", Measuring: true,
		Schema: schema.KindSchema{Def: "#DMeasure", Source: digestKinds},
		New:    func(*schema.Stage) (pipeline.Stage, error) { return dmeasure{clock: clock}, nil }})
	rows := pipelinetest.NewRecordingSink()
	var progress lockedBuffer
	sum, ri := runPlan(t, context.Background(), dir, reg, src, engine.Options{Sinks: pipelinetest.UseSinks(rows), Progress: &progress})
	if sum.ExitCode != pipeline.ExitOK {
		t.Fatalf("exit %d: %s\n%s", sum.ExitCode, sum.Reason, progress.String())
	}
	clock.mu.Lock()
	defer clock.mu.Unlock()
	if len(clock.hashed) != 1 {
		t.Fatalf("the model file was hashed %d times, want once", len(clock.hashed))
	}
	if clock.measured.IsZero() || !clock.hashed[0].Before(clock.measured) {
		t.Errorf("the model file was hashed at %s, after the measuring stage started (%s): the hash competed with the measurement",
			clock.hashed[0].Format(time.StampMicro), clock.measured.Format(time.StampMicro))
	}
	if cells := rows.Snapshot().Cells; len(cells) != 1 || cells[0].ModelDigest != zeros512MiB {
		t.Errorf("cell rows %+v: want one with model_digest %s", cells, zeros512MiB)
	}
	if out := progress.String(); !strings.Contains(out, "benchrun: hashing the model file") || !strings.Contains(out, "model file hashed in") {
		t.Errorf("no hashing progress on the progress writer:\n%s", out)
	}
	b, err := os.ReadFile(filepath.Join(ri.Dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m rundir.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.ModelDigest != zeros512MiB {
		t.Errorf("manifest model_digest %q, want %s", m.ModelDigest, zeros512MiB)
	}
}

// TestModelHashedBeforeMeasuring: a model file there when the run starts
// is hashed before the measuring stage starts, with progress shown.
func TestModelHashedBeforeMeasuring(t *testing.T) {
	dir := t.TempDir()
	if err := os.Truncate(mustCreate(t, filepath.Join(dir, "model.gguf")), 512<<20); err != nil {
		t.Fatal(err)
	}
	runDigestPlan(t, dir, `name: "digest"
model: {name: "m", file: "model.gguf"}
stages: {measure: {kind: "dmeasure"}}
`)
}

// TestLateModelHashedBeforeMeasuring: a model file that appears during
// the run (a launch stage downloads it) is hashed before the measuring
// stage starts, not when its first row is stamped.
func TestLateModelHashedBeforeMeasuring(t *testing.T) {
	runDigestPlan(t, t.TempDir(), `name: "late-digest"
model: {name: "m", file: "late.gguf"}
stages: {
	download: {kind: "mkfile", path: "late.gguf"}
	measure: {kind: "dmeasure", needs: ["download"]}
}
`)
}

func mustCreate(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}
