package plans_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
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
		{"twin-ollama-stories.cue", "ollama", "0.17.4"},
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

// TestMatrixTwinOneServerAtATime: the matrix plan's variants share a GPU,
// so each server holds the "gpu" lock while it is up: the next variant's
// server starts only after the previous one stopped, never two models on
// one GPU together. The simulators note when they start and stop (their
// shell traps the stop signal); every variant's rows carry its quant.
func TestMatrixTwinOneServerAtATime(t *testing.T) {
	out := t.TempDir()
	times := filepath.Join(out, "times.log")
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(binary, filepath.Join("testdata", "twin-matrix.cue"), "--out", out, "-t", "times="+times, "--columns", "concurrency,status,metadata")
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(times)
	if err != nil {
		t.Fatal(err)
	}
	type span struct {
		quant      string
		start, end float64
	}
	spans := map[string]*span{}
	var order []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var what, quant string
		var at float64
		if _, err := fmt.Sscanf(line, "%s %s %f", &what, &quant, &at); err != nil {
			t.Fatalf("times.log line %q: %v", line, err)
		}
		if spans[quant] == nil {
			spans[quant] = &span{quant: quant}
			order = append(order, quant)
		}
		if what == "start" {
			spans[quant].start = at
		} else {
			spans[quant].end = at
		}
	}
	if len(order) != 3 {
		t.Fatalf("want 3 servers started, got %v\n%s", order, b)
	}
	for i, q := range order {
		s := spans[q]
		if s.end == 0 {
			t.Fatalf("server %s never noted its end:\n%s", q, b)
		}
		for _, other := range order[i+1:] {
			o := spans[other]
			if o.start < s.end && s.start < o.end {
				t.Errorf("servers %s [%.3f, %.3f] and %s [%.3f, %.3f] were up at once", q, s.start, s.end, other, o.start, o.end)
			}
		}
	}
	for _, q := range []string{"Q4_K_M", "Q8_0", "F16"} {
		for _, c := range []string{"1", "2"} {
			if !strings.Contains(stdout.String(), c+`,ok,"{""quant"":""`+q+`""}"`+"\n") {
				t.Errorf("no ok row for %s at c=%s:\n%s", q, c, stdout.String())
			}
		}
	}
	if !strings.Contains(stderr.String(), "waits for gpu (held by server-Q4_K_M)") {
		t.Errorf("the waiting servers did not say what they wait for:\n%s", stderr.String())
	}
}
