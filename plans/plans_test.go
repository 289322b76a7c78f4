// Package plans_test vets every example plan through the real benchrun
// binary and runs the Ollama plan, and its faults, against a real Ollama.
package plans_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/engines"
	"github.com/benchrun/benchrun/internal/testbin"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages"
)

var binary string

func TestMain(m *testing.M) { testbin.Main(m, &binary) }

// TestExamplePlansVet checks every example plan with `benchrun vet`: the
// engines need not be installed for a plan to be valid.
func TestExamplePlansVet(t *testing.T) {
	plans, _ := filepath.Glob("*.cue")
	testdata, _ := filepath.Glob("testdata/*.cue")
	plans = append(plans, testdata...)
	for _, want := range []string{"ollama-stories.cue", "llama-q4.cue", "vllm.cue", "sglang.cue", "max.cue", "tgi.cue", "cloud-vllm.cue", "llama-bench.cue", "mlx-lm.cue"} {
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

// TestExecPlansShape checks what the exec plans promise: the seed's
// llama-bench prefill (-p 512,1024,2048 -n 0 -r 3) and generation (-p 0 -n
// 128,256 -r 3) tests on one GPU, the --split-mode layer variant on two,
// each read as JSON; mlx-lm's benchmark and generate through its parser.
func TestExecPlansShape(t *testing.T) {
	plan := resolved(t, "llama-bench.cue")
	for name, want := range map[string]string{
		"prefill":    "-p 512,1024,2048 -n 0 -r 3 -o jsonl",
		"generation": "-p 0 -n 128,256 -r 3 -o jsonl",
		"split":      "--split-mode layer -p 512,1024,2048,4096,8192 -n 0 -r 3 -o jsonl",
	} {
		st := stage(plan, name)
		cmd := fmt.Sprint(st["cmd"])
		if st["kind"] != "exec" || st["parser"] != "llama-bench" || !strings.Contains(cmd, want) {
			t.Errorf("%s: kind %v parser %v cmd %s; want %q", name, st["kind"], st["parser"], cmd, want)
		}
	}
	if g := fmt.Sprint(stage(plan, "prefill")["gpus"]); g != "[0]" {
		t.Errorf("prefill gpus %s, want one GPU", g)
	}
	if g := fmt.Sprint(stage(plan, "split")["gpus"]); g != "[0 1]" {
		t.Errorf("split gpus %s, want two", g)
	}
	mlx := resolved(t, "mlx-lm.cue")
	for _, name := range []string{"benchmark", "batch", "spot"} {
		if st := stage(mlx, name); st["kind"] != "exec" || st["parser"] != "mlx-lm" {
			t.Errorf("mlx-lm %s: %v", name, st)
		}
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

// TestEnginePlansFlags vets each engine's example plan against that
// engine's command line as its documentation gives it, so that a plan
// copied from here starts the server benchrun then talks to: the served
// name is the plan's model name, the server listens on ${host}:${port},
// its context holds every cell, and the preset polls the right paths.
func TestEnginePlansFlags(t *testing.T) {
	tests := []struct {
		plan string
		argv []string          // the command's leading words
		flag map[string]string // flag -> the value that must follow it ("" = a bare flag)
		env  map[string]string // environment the server must get
		ctx  int               // the context the server is started with (tokens per sequence)
		// health and metrics: the engine preset's readiness path and where metrics are
		health, metrics string
	}{
		{plan: "llama-q4.cue", argv: []string{"llama-server"},
			flag:   map[string]string{"-m": "${model_file}", "--alias": "llama-3.2-1b", "--host": "${host}", "--port": "${port}", "--metrics": "", "-np": "8", "-c": "32768"},
			ctx:    32768 / 8,
			health: "/health", metrics: "/metrics"},
		{plan: "vllm.cue", argv: []string{"vllm", "serve", "meta-llama/Llama-3.2-1B-Instruct"},
			flag:   map[string]string{"--served-model-name": "llama-3.2-1b", "--host": "${host}", "--port": "${port}", "--max-model-len": "4096"},
			ctx:    4096,
			health: "/health", metrics: "/metrics"},
		{plan: "sglang.cue", argv: []string{"python3", "-m", "sglang.launch_server"},
			flag:   map[string]string{"--model-path": "meta-llama/Llama-3.2-1B-Instruct", "--served-model-name": "llama-3.2-1b", "--host": "${host}", "--port": "${port}", "--context-length": "4096", "--enable-metrics": ""},
			ctx:    4096,
			health: "/health", metrics: "/metrics"},
		{plan: "max.cue", argv: []string{"max", "serve"},
			flag:   map[string]string{"--model-path": "meta-llama/Llama-3.2-1B-Instruct", "--served-model-name": "llama-3.2-1b", "--port": "${port}", "--max-length": "4096"},
			env:    map[string]string{"MAX_SERVE_HOST": "${host}", "MAX_SERVE_METRICS_ENDPOINT_PORT": "8001"},
			ctx:    4096,
			health: "/v1/health", metrics: "/metrics"},
		// TGI lists its one model under its model id: that is the served name.
		{plan: "tgi.cue", argv: []string{"text-generation-launcher"},
			flag:   map[string]string{"--model-id": "meta-llama/Llama-3.2-1B-Instruct", "--hostname": "${host}", "--port": "${port}", "--max-total-tokens": "4096", "--max-input-tokens": "3072"},
			ctx:    4096,
			health: "/health", metrics: "/metrics"},
		{plan: "ollama-stories.cue", argv: []string{"ollama", "serve"},
			env:    map[string]string{"OLLAMA_HOST": "${host}:${port}", "OLLAMA_MODELS": "${run_dir}/ollama-models"},
			ctx:    512,
			health: "/", metrics: ""},
	}
	for _, tt := range tests {
		t.Run(tt.plan, func(t *testing.T) {
			plan := resolved(t, tt.plan)
			model := plan["model"].(map[string]any)
			name := model["name"].(string)
			server := stage(plan, "server")
			var argv []string
			for _, a := range server["cmd"].([]any) {
				argv = append(argv, a.(string))
			}
			if len(argv) < len(tt.argv) || fmt.Sprint(argv[:len(tt.argv)]) != fmt.Sprint(tt.argv) {
				t.Errorf("cmd %q does not start with %q", argv, tt.argv)
			}
			for f, want := range tt.flag {
				i := slices.Index(argv, f)
				switch {
				case i < 0:
					t.Errorf("cmd lacks %s", f)
				case want != "" && (i+1 >= len(argv) || argv[i+1] != want):
					t.Errorf("cmd: %s is not followed by %q: %q", f, want, argv)
				}
			}
			env, _ := server["env"].(map[string]any)
			for k, want := range tt.env {
				if env[k] != want {
					t.Errorf("env %s = %v, want %q", k, env[k], want)
				}
			}
			// The served name benchrun asks for is the one the flags give.
			for _, f := range []string{"--alias", "--served-model-name", "--model-id"} {
				if i := slices.Index(argv, f); i >= 0 && argv[i+1] != name {
					t.Errorf("%s %s, but model.name is %q: health would fail with the served names", f, argv[i+1], name)
				}
			}
			if m, ok := model["max_model_len"].(float64); !ok || int(m) != tt.ctx {
				t.Errorf("model.max_model_len = %v, want the server's context %d", model["max_model_len"], tt.ctx)
			}
			for sname, st := range plan["stages"].(map[string]any) {
				cells, _ := st.(map[string]any)["cells"].([]any)
				for _, c := range cells {
					c := c.(map[string]any)
					if isl, osl := c["isl"].(float64), c["osl"].(float64); int(isl+osl) > tt.ctx {
						t.Errorf("stages.%s cell %v:%v does not fit the server's %d-token context", sname, isl, osl, tt.ctx)
					}
				}
			}
			eng := engines.For(server["engine"].(string))
			if eng.HealthPath != tt.health || eng.MetricsPath != tt.metrics || eng.ModelsPath != "/v1/models" {
				t.Errorf("preset %+v: want health %s, models /v1/models, metrics %q", eng, tt.health, tt.metrics)
			}
			if h := stage(plan, "health"); h["path"] != nil || h["models_path"] != nil {
				t.Errorf("health overrides the preset: %v", h)
			}
		})
	}
}
