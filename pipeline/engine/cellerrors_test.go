package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/schema"
)

const cellKinds = `
#Cells: {
	#StageBase
	kind: "cells"
	// The status of each cell row the stage emits, in order.
	statuses: [...string]
}
#Post: {
	#StageBase
	kind: "post"
}
`

// cells emits one cell row per configured status: an error row has no
// latency (null) and a reason, as a sweep's cell whose requests all failed.
type cells struct {
	name     string
	Statuses []string `json:"statuses"`
}

func (*cells) Validate(*pipeline.Check) error { return nil }

func (c *cells) Run(_ context.Context, env *pipeline.Env) (*pipeline.Outputs, error) {
	for i, st := range c.Statuses {
		row := results.Cell{Stage: c.name, CellID: fmt.Sprintf("%s/8:4/c%d", c.name, i+1), ISL: 8, OSL: 4, Concurrency: int64(i + 1),
			Requests: 4, Status: st, StartedAt: time.Now(), ReqS: results.Some(0.0)}
		if st == results.StatusError {
			row.Failed, row.Reason = 4, "4 of 4 requests failed; first: HTTP 500: Internal server error"
		} else {
			row.Completed, row.TTFTP99Ms, row.ReqS = 4, results.Some(20.0), results.Some(10.0)
		}
		if err := env.Emit(row, nil); err != nil {
			return nil, err
		}
	}
	return &pipeline.Outputs{}, nil
}

// posted records that the post stage ran.
type posted struct{ ran *bool }

func (posted) Validate(*pipeline.Check) error { return nil }
func (p posted) Run(context.Context, *pipeline.Env) (*pipeline.Outputs, error) {
	*p.ran = true
	return &pipeline.Outputs{}, nil
}

func runCells(t *testing.T, src string) (*pipeline.Summary, map[string]pipeline.StageResult, string, bool) {
	t.Helper()
	ran := false
	reg := pipeline.NewRegistry()
	reg.AddKind(pipeline.Kind{Name: "cells", Doc: "test cells", Measuring: true, Schema: schema.KindSchema{Def: "#Cells", Source: "package schema\n" + cellKinds},
		New: func(s *schema.Stage) (pipeline.Stage, error) { c := &cells{name: s.Name}; return c, s.Decode(c) }})
	reg.AddKind(pipeline.Kind{Name: "post", Doc: "test post", Schema: schema.KindSchema{Def: "#Post", Source: "package schema\n"},
		New: func(*schema.Stage) (pipeline.Stage, error) { return posted{&ran}, nil }})
	var progress bytes.Buffer
	sum, ri := runPlan(t, context.Background(), t.TempDir(), reg, src, engine.Options{Progress: &progress, FinallyTimeout: 5 * time.Second})
	by := map[string]pipeline.StageResult{}
	for _, s := range sum.Stages {
		by[s.Name] = s
	}
	man, err := os.ReadFile(filepath.Join(ri.Dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	return sum, by, progress.String() + "\n--- manifest.json\n" + string(man), ran
}

// A stage whose cells are all error is not ok, even without a single
// assertion: the summary and the manifest say "error" with how many cells
// and the first reason, the progress line is not "✓ sweep ok", and the run
// exits 3 (nothing was measured), never 0. Its dependents still run: a
// post stage posts a failed sweep.
func TestEveryCellErrorIsNotOK(t *testing.T) {
	sum, by, out, posted := runCells(t, `
name: "allerr"
stages: {
	sweep: {kind: "cells", statuses: ["error", "error"]}
	post:  {kind: "post", needs: ["sweep"]}
}`)
	if sum.ExitCode != pipeline.ExitInfra {
		t.Errorf("exit %d, want %d: a run with an error cell never exits 0", sum.ExitCode, pipeline.ExitInfra)
	}
	s := by["sweep"]
	if s.Status != pipeline.StatusError || !strings.HasPrefix(s.Reason, "2 of 2 cells error; first: sweep 8:4 c=1: 4 of 4 requests failed; first: HTTP 500") {
		t.Errorf("sweep: status %q reason %q; want error with the count and the first reason", s.Status, s.Reason)
	}
	if !strings.Contains(sum.Reason, "stage sweep: 2 of 2 cells error") {
		t.Errorf("summary reason %q", sum.Reason)
	}
	if strings.Contains(out, "✓ sweep ok") || !strings.Contains(out, "✗ sweep ended with errors") {
		t.Errorf("progress and manifest:\n%s", out)
	}
	if !strings.Contains(out, `"status": "error"`) || !strings.Contains(out, `"reason": "2 of 2 cells error;`) {
		t.Errorf("the manifest does not record the stage's error status:\n%s", out)
	}
	if !posted || by["post"].Status != pipeline.StatusOK {
		t.Errorf("post: ran %v status %q (%s); a stage with error cells does not skip its dependents", posted, by["post"].Status, by["post"].Reason)
	}
}

// One error cell among ok ones is enough: the stage is "error" with "1 of
// 3", and an assertion that reads the null metric of that cell is an error
// verdict; the run exits 3 (a measurement failed), not 1.
func TestSomeCellsErrorWithAssertions(t *testing.T) {
	sum, by, out, _ := runCells(t, `
name: "someerr"
stages: {
	sweep: {kind: "cells", statuses: ["ok", "error", "ok"], assert: ["ttft_p99_ms < 500"]}
}`)
	if sum.ExitCode != pipeline.ExitInfra {
		t.Errorf("exit %d, want %d", sum.ExitCode, pipeline.ExitInfra)
	}
	if s := by["sweep"]; s.Status != pipeline.StatusError || !strings.HasPrefix(s.Reason, "1 of 3 cells error; first: sweep 8:4 c=2") {
		t.Errorf("sweep: status %q reason %q", s.Status, s.Reason)
	}
	if len(sum.Verdicts) != 3 || len(sum.Failed) != 1 || sum.Failed[0].Error != "ttft_p99_ms is null: not measured (every request failed)" {
		t.Errorf("verdicts %d, failed %+v; want the c=2 verdict an error naming the null metric", len(sum.Verdicts), sum.Failed)
	}
	if !strings.Contains(out, `could not be evaluated: ttft_p99_ms is null: not measured (every request failed)`) {
		t.Errorf("progress lacks the null verdict:\n%s", out)
	}
}

// Cells that are all ok keep the stage ok and the exit 0.
func TestOKCellsStayOK(t *testing.T) {
	sum, by, out, _ := runCells(t, `
name: "allok"
stages: sweep: {kind: "cells", statuses: ["ok", "ok"], assert: ["ttft_p99_ms < 500"]}`)
	if sum.ExitCode != pipeline.ExitOK || by["sweep"].Status != pipeline.StatusOK || !strings.Contains(out, "✓ sweep ok") {
		t.Errorf("exit %d status %q:\n%s", sum.ExitCode, by["sweep"].Status, out)
	}
}
