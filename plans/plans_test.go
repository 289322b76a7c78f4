// Package plans_test vets every example plan through the real benchrun
// binary and runs the Ollama plan, and its faults, against a real Ollama.
package plans_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "benchrun-plans-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "benchrun")
	build := exec.Command("go", "build", "-o", binary, "../cmd/benchrun")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building benchrun:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestExamplePlansVet checks every example plan with `benchrun vet`: the
// engines need not be installed for a plan to be valid.
func TestExamplePlansVet(t *testing.T) {
	plans, _ := filepath.Glob("*.cue")
	testdata, _ := filepath.Glob("testdata/*.cue")
	plans = append(plans, testdata...)
	for _, want := range []string{"ollama-stories.cue", "llama-q4.cue", "vllm.cue", "sglang.cue", "max.cue", "tgi.cue", "cloud-vllm.cue"} {
		found := false
		for _, p := range plans {
			found = found || p == want
		}
		if !found {
			t.Errorf("example plan %s is missing", want)
		}
	}
	for _, p := range plans {
		t.Run(p, func(t *testing.T) {
			var out bytes.Buffer
			cmd := exec.Command(binary, "vet", p)
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("benchrun vet %s: %v\n%s", p, err, out.String())
			}
		})
	}
}

// TestExamplePlansShape checks what each engine's plan promises: the
// preset, a launch stage, health before the sweep, and the seed's default
// sweep for llama-q4.
func TestExamplePlansShape(t *testing.T) {
	tests := []struct {
		plan, engine string
		check        func(t *testing.T, plan map[string]any)
	}{
		{"llama-q4.cue", "llama-server", func(t *testing.T, plan map[string]any) {
			sweep := stage(plan, "sweep")
			if got := fmt.Sprint(sweep["cells"]); got != "[map[isl:128 osl:128] map[isl:2048 osl:128] map[isl:128 osl:1024]]" {
				t.Errorf("cells = %s, want the seed's default three", got)
			}
			if got := fmt.Sprint(sweep["concurrency"]); got != "[1 4 8]" {
				t.Errorf("concurrency = %s", got)
			}
			if m := plan["metadata"].(map[string]any); m["quant"] != "Q4_K_M" {
				t.Errorf("metadata = %v", m)
			}
		}},
		{"vllm.cue", "vllm", nil},
		{"sglang.cue", "sglang", nil},
		{"max.cue", "max", nil},
		{"tgi.cue", "tgi", nil},
		{"ollama-stories.cue", "ollama", nil},
		{"cloud-vllm.cue", "vllm", func(t *testing.T, plan map[string]any) {
			if pod := stage(plan, "pod"); pod["kind"] != "provision" || pod["cost_per_hour"] == nil {
				t.Errorf("pod = %v", pod)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.plan, func(t *testing.T) {
			plan := resolved(t, tt.plan)
			server := stage(plan, "server")
			if server["kind"] != "launch" || server["engine"] != tt.engine {
				t.Fatalf("server = %v", server)
			}
			if h := stage(plan, "health"); h["target"] != "server" {
				t.Errorf("health = %v", h)
			}
			if tt.check != nil {
				tt.check(t, plan)
			}
		})
	}
}

func stage(plan map[string]any, name string) map[string]any {
	s, _ := plan["stages"].(map[string]any)[name].(map[string]any)
	return s
}

// resolved is the plan as benchrun resolves it (defaults applied).
func resolved(t *testing.T, plan string) map[string]any {
	t.Helper()
	reg := pipeline.NewRegistry()
	stages.Builtin(reg)
	p, err := schema.Load(plan, schema.Options{Kinds: reg.Schemas()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
