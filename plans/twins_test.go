package plans_test

import (
	"bytes"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimulatorTwins runs each engine plan's simulator twin end to end
// through the real binary: the simulator reproduces that engine's habits
// (docs/SIM.md), so the path a real llama-server, vLLM, SGLang or Ollama
// takes through benchrun is exercised in CI without the engine. Every row
// must be ok with prompts and outputs of exactly isl and osl tokens, and
// carry the engine's name and version.
func TestSimulatorTwins(t *testing.T) {
	for _, tc := range []struct{ plan, engine, version string }{
		{"twin-llama-q4.cue", "llama-server", "b6500-sim"},
		{"twin-vllm.cue", "vllm", "0.11.0"},
		{"twin-sglang.cue", "sglang", "0.5.2"},
		{"twin-ollama-stories.cue", "ollama", "0.6.5"},
	} {
		t.Run(tc.plan, func(t *testing.T) {
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(binary, filepath.Join("testdata", tc.plan), "--out", out)
			cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s: %v\n%s", tc.plan, err, stderr.String())
			}
			files, _ := filepath.Glob(filepath.Join(out, "*", "*", "*", "cells.csv"))
			if len(files) != 1 {
				t.Fatalf("cells.csv: %v", files)
			}
			f, err := os.Open(files[0])
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			recs, err := csv.NewReader(f).ReadAll()
			if err != nil || len(recs) < 2 {
				t.Fatalf("cells.csv: %d records, %v", len(recs), err)
			}
			col := map[string]int{}
			for i, h := range recs[0] {
				col[h] = i
			}
			for _, r := range recs[1:] {
				get := func(k string) string { return r[col[k]] }
				if get("status") != "ok" || get("effective_isl") != get("isl") || get("effective_osl") != get("osl") ||
					get("engine") != tc.engine || get("engine_version") != tc.version {
					t.Errorf("%s: status %s %q, isl %s/%s, osl %s/%s, engine %s %s", get("cell_id"), get("status"), get("reason"),
						get("effective_isl"), get("isl"), get("effective_osl"), get("osl"), get("engine"), get("engine_version"))
				}
			}
			if !strings.Contains(stderr.String(), "results:") {
				t.Errorf("stderr:\n%s", stderr.String())
			}
		})
	}
}
