//go:build linux

package plans_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// ollamaPinnedPlan is ollama-stories' server pinned to CPU 0 behind a shell
// that waits for it: `ollama serve` is the launch guard's grandchild and
// the runner it forks for the model, which does the inference, its
// great-grandchild.
const ollamaPinnedPlan = `name: "ollama-starved"
model: {name: "stories", file: "MODEL", max_model_len: 512}
_env: {OLLAMA_HOST: "${host}:${port}", OLLAMA_MODELS: "${run_dir}/ollama-models"}
stages: {
	server: {
		kind:   "launch"
		engine: "ollama"
		cmd: ["sh", "-c", "taskset -c 0 ollama serve & wait"]
		env: _env & {OLLAMA_NUM_PARALLEL: "4", OLLAMA_KEEP_ALIVE: "-1"}
		files: Modelfile: """
			FROM ${model_file}
			PARAMETER num_ctx 512
			PARAMETER num_thread 1
			"""
		after_start: [{cmd: ["ollama", "create", model.name, "-f", "${run_dir}/Modelfile"], timeout: "2m"}]
		stop_grace: "3s"
	}
	health: {kind: "health", target: "server", within: "2m"}
	warmup: {kind: "warmup", target: "server", needs: ["health"], requests: 4}
	sweep: {
		kind:        "sweep"
		target:      "server"
		needs:       ["warmup"]
		endpoint:    "completions"
		cells:       [{isl: 48, osl: 24}]
		concurrency: [4]
		requests:    16
		warmup:      1
	}
}
`

// TestOllamaStarvedServersWait: on a real engine, server_cpu_wait_ms is
// the server's own threads' wait, read from its whole tree however
// deep: Ollama's inference runs in the runner `ollama serve` forks, here
// below a shell, pinned to CPU 0. benchrun, the client, runs pinned to
// CPU 1. Beside eight `sha256sum /dev/zero` pinned to CPU 0 the server's
// wait rises well over its wait without them (twice and more: the
// machine is not idle without them) and over the client's wait in the
// same cell. Read from the guard or the shell (both sleep) it would not
// rise; from the client's threads, it would not exceed the client's.
func TestOllamaStarvedServersWait(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Ollama beside CPU-bound processes")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs: one for the server and its neighbours, one for the client")
	}
	dir := ollamaDir(t)
	modelPresent(t)
	model, err := filepath.Abs("../testdata/models/stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(t.TempDir(), "plan.cue")
	if err := os.WriteFile(plan, []byte(strings.Replace(ollamaPinnedPlan, "MODEL", model, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	quiet := runPinnedOllama(t, dir, plan)
	for range 8 {
		cmd := exec.Command("taskset", "-c", "0", "sha256sum", "/dev/zero")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
		})
	}
	busy := runPinnedOllama(t, dir, plan)
	for _, c := range []struct {
		name string
		c    results.Cell
	}{{"no neighbours", quiet}, {"8 neighbours on the server's CPU", busy}} {
		if c.c.ServerCPUWaitMs == nil || c.c.ClientCPUWaitMs == nil {
			t.Fatalf("%s: server_cpu_wait_ms %v, client_cpu_wait_ms %v: not measured (%s)", c.name, c.c.ServerCPUWaitMs, c.c.ClientCPUWaitMs, c.c.Notes)
		}
		t.Logf("%s: server waited %.1f ms, client %.1f ms for a CPU over a %.2f s cell; ttft p50 %.1f ms, itl p50 %.2f ms; server CPU %.2f s; machine late p99 %.2f ms",
			c.name, *c.c.ServerCPUWaitMs, *c.c.ClientCPUWaitMs, c.c.DurationS, results.ValueOr(c.c.TTFTP50Ms, -1), results.ValueOr(c.c.ITLP50Ms, -1), results.ValueOr(c.c.ServerCPUS, -1), results.ValueOr(c.c.MachineLateP99Ms, -1))
	}
	sw, cw, sq := *busy.ServerCPUWaitMs, *busy.ClientCPUWaitMs, *quiet.ServerCPUWaitMs
	if sw < 2*sq+20 {
		t.Errorf("server_cpu_wait_ms %.1f beside 8 hogs on its CPU against %.1f without: want at least 2× + 20 ms (did it read the runner's threads?)", sw, sq)
	}
	if sw < 3*cw {
		t.Errorf("server_cpu_wait_ms %.1f against the client's %.1f on a CPU without hogs: want at least 3×", sw, cw)
	}
}

// runPinnedOllama runs plan with benchrun pinned to CPU 1 and returns its
// one row.
func runPinnedOllama(t *testing.T, dir, plan string) results.Cell {
	t.Helper()
	b := &benchrun{out: t.TempDir()}
	b.cmd = exec.Command("taskset", "-c", "1", binary, plan, "--out", b.out)
	b.cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	b.cmd.Stdout, b.cmd.Stderr = &b.stdout, &b.stderr
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if left := processesOf(b.out); len(left) > 0 {
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Errorf("processes of the run still running: %v", left)
		}
	})
	if code := b.wait(t, 4*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, b.stderr.String())
	}
	cells := readCells(t, b.runDir(t))
	if len(cells) != 1 {
		t.Fatalf("%d cells, want 1\n%s", len(cells), b.stderr.String())
	}
	return cells[0]
}
