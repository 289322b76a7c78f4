package stages_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages"
	"github.com/benchrun/benchrun/stages/warmup"
)

// These tests check the contracts between the built-in kinds
// (pipeline/contracts.go) with the real kinds on both sides: what vet says
// when one side does not offer what the other needs, and what a warm-up
// learns from the sweep after it.

// buildPlan loads stages (the body of `stages: {...}`) with the built-in
// kinds and builds the graph; the error is Build's.
func buildPlan(t *testing.T, body string) (*pipeline.Graph, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.cue")
	src := "name: \"p\"\nmodel: {name: \"m\"}\nstages: {\n" + body + "\n}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := pipeline.NewRegistry()
	stages.Builtin(reg)
	p, err := schema.Load(path, reg.LoadOptions(nil))
	if err != nil {
		t.Fatalf("load:\n%s\n%v", src, err)
	}
	return pipeline.Build(p, reg)
}

// TestSweepServerVarsAgainstTheTarget: a sweep's cells may give server
// variables only to a target that restarts per cell
// (pipeline.CellRestarter): a URL or a stage that is not one is refused,
// a launch stage without restart: per_cell is told to set it, and with
// it every ${cell.KEY} of its cmd and env must be in every cell. Each
// problem is at its position in the plan.
func TestSweepServerVarsAgainstTheTarget(t *testing.T) {
	const (
		perCell = `server: {kind: "launch", cmd: ["srv", "-np", "${cell.np}"], restart: "per_cell"}` + "\n"
		once    = `server: {kind: "launch", cmd: ["srv"]}` + "\n"
	)
	tests := []struct {
		name, body string
		want       string // "" when the plan is valid
	}{
		{"a URL target", `sweep: {kind: "sweep", target: "http://127.0.0.1:9", cells: [{isl: 8, osl: 8, server: {np: "4"}}]}`,
			`stages.sweep.cells.0.server: server variables need a launch stage as the target (restarted with them before the cell), not "http://127.0.0.1:9"`},
		{"a target that is not a CellRestarter", `health: {kind: "health", target: "http://127.0.0.1:9"}
	sweep: {kind: "sweep", target: "health", cells: [{isl: 8, osl: 8, server: {np: "4"}}]}`,
			`stages.sweep.cells.0.server: server variables need a launch stage as the target (restarted with them before the cell), not "health"`},
		{"a launch stage started once", once + `sweep: {kind: "sweep", target: "server", cells: [{isl: 8, osl: 8, server: {np: "4"}}]}`,
			`stages.sweep.cells.0.server: server variables reach the server only through a restart before each cell: set restart: "per_cell" on stages.server`},
		{"restart per cell, every variable given", perCell + `sweep: {kind: "sweep", target: "server", cells: [{isl: 8, osl: 8, server: {np: "4"}}, {isl: 8, osl: 8, server: {np: "8"}}]}`, ""},
		{"restart per cell, a cell without the variable", perCell + `sweep: {kind: "sweep", target: "server", cells: [{isl: 8, osl: 8, server: {np: "4"}}, {isl: 8, osl: 8, server: {tag: "x"}}]}`,
			`stages.sweep.cells.1.server: the cell gives no server variable np, which stages.server uses as ${cell.np}`},
		{"restart per cell, a cell without server variables", perCell + `sweep: {kind: "sweep", target: "server", cells: [{isl: 8, osl: 8, server: {np: "4"}}, {isl: 8, osl: 8}]}`,
			`stages.sweep.cells.1: the cell gives no server variable np`},
		// The launch stage learns its first start's variables from the
		// sweep's first cell (pipeline.LoadShaper); with no stage giving
		// any, ${cell.np} could never be filled.
		{"restart per cell, no sweep gives variables", perCell + `sweep: {kind: "sweep", target: "server", cells: [{isl: 8, osl: 8}]}`,
			`stages.server.cmd: ${cell.np}, but no stage targeting server gives its cells server variables`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := buildPlan(t, tt.body)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var es schema.Errors
			if !errors.As(err, &es) {
				t.Fatalf("err = %v, want schema.Errors with %q", err, tt.want)
			}
			for _, e := range es {
				if strings.Contains(e.Msg, tt.want) {
					if e.Pos.Line == 0 || e.Pos.Col == 0 {
						t.Errorf("%q has no position: %v", e.Msg, e.Pos)
					}
					return
				}
			}
			t.Fatalf("err = %v\nwant %q", err, tt.want)
		})
	}
}

// TestWarmupTakesTheSweepsShape: the warm-up learns the load of the sweep
// that needs it through pipeline.LoadShaper, the same at vet time (Check)
// and at run time (Env, also on a graph cut down by --only): the top of a
// closed-loop ladder, or an open loop at the top rate.
func TestWarmupTakesTheSweepsShape(t *testing.T) {
	tests := []struct {
		name, sweep string
		want        warmup.Shape
	}{
		{"closed loop", `endpoint: "chat", concurrency: [1, 8, 4], cells: [{isl: 256, osl: 64}, {isl: 16, osl: 8}], seed: 7`,
			warmup.Shape{Endpoint: "chat", Concurrency: 8, ISL: 256, OSL: 64, Cells: [][2]int{{256, 64}, {16, 8}}, Calibrate: "auto", Seed: 7}},
		{"open loop", `rates: [2, 16, 4], arrival: "constant", cells: [{isl: 32, osl: 8}], calibrate: "off"`,
			warmup.Shape{Endpoint: "completions", Rate: 16, Arrival: "constant", ISL: 32, OSL: 8, Cells: [][2]int{{32, 8}}, Calibrate: "off", Seed: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := buildPlan(t, `warmup: {kind: "warmup", target: "http://127.0.0.1:9"}
	sweep: {kind: "sweep", target: "http://127.0.0.1:9", needs: ["warmup"], `+tt.sweep+`}`)
			if err != nil {
				t.Fatal(err)
			}
			w := g.Node("warmup").Stage.(*warmup.Stage)
			if got := w.ShapeFor(g.Check("warmup").Dependents()); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("at vet time: %+v\nwant %+v", got, tt.want)
			}
			only, err := g.Only([]string{"warmup"})
			if err != nil {
				t.Fatal(err)
			}
			for name, env := range map[string]*pipeline.Env{
				"the runner's graph": {Stage: g.Node("warmup").Spec, Plan: g.Plan, Graph: g},
				"--only warmup":      {Stage: g.Node("warmup").Spec, Plan: g.Plan, Graph: only},
			} {
				if got := w.ShapeFor(env.Dependents()); !reflect.DeepEqual(got, tt.want) {
					t.Errorf("at run time (%s): %+v\nwant %+v", name, got, tt.want)
				}
			}
		})
	}
}

// TestWarmupBeforeAStageThatIsNotALoadShaper: a warm-up needed only by
// stages that do not say what load they apply (here a health stage) warms
// with its own fields and the defaults, and vet says so (a warning, exit
// 0), naming the stage and the defaults.
func TestWarmupBeforeAStageThatIsNotALoadShaper(t *testing.T) {
	g, err := buildPlan(t, `warmup: {kind: "warmup", target: "http://127.0.0.1:9"}
	check: {kind: "health", target: "http://127.0.0.1:9", needs: ["warmup"]}`)
	if err != nil {
		t.Fatal(err)
	}
	want := "stages.warmup: no stage that needs this warm-up says what load it applies (stages.check (health)), so it warms with the defaults concurrency 1, isl 128, osl 32"
	if len(g.Warnings) != 1 || !strings.Contains(g.Warnings[0].Msg, want) || g.Warnings[0].Pos.Line == 0 {
		t.Fatalf("warnings: %v\nwant one with a position, saying %q", g.Warnings, want)
	}
	w := g.Node("warmup").Stage.(*warmup.Stage)
	if got := w.ShapeFor(g.Check("warmup").Dependents()); got.Concurrency != 1 || got.ISL != 128 || got.OSL != 32 || got.Endpoint != "completions" {
		t.Errorf("shape = %+v, want the defaults", got)
	}
}

// TestLaunchWarnsWithoutAReadinessGate: a stage sending to a launch stage
// with no health stage (pipeline.ReadinessGate) of that server before it
// is warned about; the real health kind, directly or through a warm-up,
// silences it.
func TestLaunchWarnsWithoutAReadinessGate(t *testing.T) {
	const server = `server: {kind: "launch", cmd: ["srv"]}` + "\n"
	tests := []struct {
		name, body string
		warned     bool
	}{
		{"no health", server + `sweep: {kind: "sweep", target: "server"}`, true},
		{"health before it", server + `health: {kind: "health", target: "server"}
	sweep: {kind: "sweep", target: "server", needs: ["health"]}`, false},
		{"health of another server", server + `health: {kind: "health", target: "http://127.0.0.1:9"}
	sweep: {kind: "sweep", target: "server", needs: ["health"]}`, true},
		{"health through a warm-up", server + `health: {kind: "health", target: "server"}
	warmup: {kind: "warmup", target: "server", needs: ["health"]}
	sweep: {kind: "sweep", target: "server", needs: ["warmup"]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := buildPlan(t, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			warned := false
			for _, w := range g.Warnings {
				if strings.Contains(w.Msg, "stages.sweep sends to stages.server (a launch stage) with no health stage before it") {
					warned = true
				}
			}
			if warned != tt.warned {
				t.Errorf("warned = %v, want %v: %v", warned, tt.warned, g.Warnings)
			}
		})
	}
}
