package plans_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/procrun/procruntest"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	"github.com/benchrun/benchrun/internal/testkit"
)

// ollamaDir finds the ollama binary (PATH, then $(go env GOPATH)/bin) and
// returns its directory; it skips the test when there is none, unless CI
// is set, where a missing engine is a failure.
func ollamaDir(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("ollama"); err == nil {
		return filepath.Dir(p)
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "ollama")
		if _, err := os.Stat(p); err == nil {
			return filepath.Dir(p)
		}
	}
	if required() {
		t.Fatal("ollama is not installed, and the real-engine tests must run (CI or BENCHRUN_REQUIRE_ENGINES is set, as ./test.sh sets it): run .ci/install-ollama.sh")
	}
	t.Skip("ollama is not installed: run .ci/install-ollama.sh (Ollama v0.17.4, go install)")
	return ""
}

// ollamaModuleVersion is the version of the Ollama module the binary in
// dir was built from, as `go version -m` reads it from the binary ("0.17.4";
// "" for a binary without Go build information, such as a release
// download). A `go install`ed Ollama says it is 0.0.0 unless its linker
// flags set its version, as .ci/install-ollama.sh does.
func ollamaModuleVersion(t *testing.T, dir string) string {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", filepath.Join(dir, "ollama")).Output()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "mod" && f[1] == "github.com/ollama/ollama" {
			return strings.TrimPrefix(f[2], "v")
		}
	}
	return ""
}

func modelPresent(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("../testdata/models/stories260K.gguf"); err != nil {
		t.Fatalf("the model the repository keeps is missing: %v", err)
	}
}

// required says whether a real-engine test must run rather than skip: under
// CI and under ./test.sh (BENCHRUN_REQUIRE_ENGINES), which installs what
// they need; a plain `go test` on a machine without Ollama skips them, and
// says so.
func required() bool { return os.Getenv("CI") != "" || os.Getenv("BENCHRUN_REQUIRE_ENGINES") != "" }

type benchrun struct {
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
	out            string
}

// syncBuffer is the tests' synchronized buffer (testkit).
type syncBuffer = testkit.SyncBuffer

func startBenchrun(t *testing.T, dir string, args ...string) *benchrun {
	t.Helper()
	b := &benchrun{out: t.TempDir()}
	b.cmd = exec.Command(binary, append(args, "--out", b.out)...)
	b.cmd.Env = os.Environ()
	if dir != "" {
		b.cmd.Env = append(b.cmd.Env, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	b.cmd.Stdout, b.cmd.Stderr = &b.stdout, &b.stderr
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if b.cmd.ProcessState == nil {
			b.cmd.Process.Kill()
			b.cmd.Wait()
		}
		// Whatever happened, nothing this run started may still be running.
		if left := processesOf(b.out); len(left) > 0 {
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Errorf("processes of the run still running: %v", left)
		}
	})
	return b
}

func (b *benchrun) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- b.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(within):
		b.cmd.Process.Signal(syscall.SIGINT)
		<-done
		t.Fatalf("benchrun did not finish within %s:\n%s", within, b.stderr.String())
	}
	return b.cmd.ProcessState.ExitCode()
}

func (b *benchrun) runDir(t *testing.T) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(b.out, "plan=*", "date=*", "run=*"))
	if len(dirs) != 1 {
		t.Fatalf("run directories: %v", dirs)
	}
	return dirs[0]
}

// processesOf lists live processes whose environment mentions dir (the
// run directory is in OLLAMA_MODELS, which ollama passes to its runner).
func processesOf(dir string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, []byte(dir)) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			s := string(st)
			if i := strings.LastIndexByte(s, ')'); i > 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X') {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

// ollamaServe finds the `ollama serve` of a run and its process group.
func ollamaServe(dir string) (pid, pgid int) {
	for _, p := range processesOf(dir) {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		if strings.Contains(string(cmdline), "ollama\x00serve") {
			st, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
			s := string(st)
			f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
			g, _ := strconv.Atoi(f[2])
			return p, g
		}
	}
	return 0, 0
}

func csvRows(t *testing.T, s string) []map[string]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("stdout is not CSV (%v):\n%s", err, s)
	}
	var rows []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		rows = append(rows, m)
	}
	return rows
}

// waitFor polls until cond holds or the benchrun process ends.
// waitFirstCell waits until benchrun has written its run directory and a
// first finished cell into it, and returns the run directory.
func waitFirstCell(t *testing.T, b *benchrun) string {
	t.Helper()
	var run string
	waitFor(t, b, 2*time.Minute, "the first cell", func() bool {
		dirs, _ := filepath.Glob(filepath.Join(b.out, "plan=*", "date=*", "run=*"))
		if len(dirs) == 1 {
			run = dirs[0]
		}
		return run != "" && len(finishedCells(run)) >= 1
	})
	return run
}

func waitFor(t *testing.T, b *benchrun, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s\n%s", what, within, b.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readCells(t *testing.T, run string) []results.Cell {
	t.Helper()
	cells, err := resultstest.ReadTable[results.Cell](run, "cells")
	if err != nil {
		t.Fatal(err)
	}
	return cells
}

func finishedCells(dir string) []string {
	parts, _ := filepath.Glob(filepath.Join(dir, "cells", "*.parquet"))
	return parts
}

// TestOllamaStories is the proof on a real engine: the example plan
// as a user runs it.
func TestOllamaStories(t *testing.T) {
	dir := ollamaDir(t)
	modelPresent(t)
	start := time.Now()
	b := startBenchrun(t, dir, "ollama-stories.cue")
	code := b.wait(t, 4*time.Minute)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, b.stderr.String())
	}
	rows := csvRows(t, b.stdout.String())
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 2 endpoints × 3 ladder points:\n%s", len(rows), b.stdout.String())
	}
	t.Logf("ollama-stories in %s:\n%s", time.Since(start).Round(time.Second), b.stdout.String())
	run := b.runDir(t)
	cells, err := resultstest.ReadTable[results.Cell](run, "cells")
	if err != nil {
		t.Fatal(err)
	}
	byEndpoint := map[string][]int64{}
	waited := 0.0
	// The rows carry the engine's real version: the one its module was
	// built from, not the 0.0.0 a plain `go install` says.
	wantVersion := ollamaModuleVersion(t, dir)
	for _, c := range cells {
		if c.EngineVersion == "" || c.EngineVersion == "0.0.0" || (wantVersion != "" && c.EngineVersion != wantVersion) {
			t.Errorf("cell %s: engine_version %q, want the module version %q (.ci/install-ollama.sh sets it)", c.CellID, c.EngineVersion, wantVersion)
		}
		// The server's threads' wait for a CPU is read from its own tree
		// (ollama serve and its runner), never its guard's (0 on every
		// row when it read the guard).
		if c.ServerCPUWaitMs == nil {
			t.Errorf("cell %s: server_cpu_wait_ms is null", c.CellID)
		} else {
			waited = max(waited, *c.ServerCPUWaitMs)
		}
		if c.Status != "ok" || c.Failed != 0 || c.Completed == 0 || c.Engine != "ollama" || c.Model != "stories" {
			t.Errorf("cell %s: status %s, %d completed, %d failed, engine %q, model %q (%s)", c.CellID, c.Status, c.Completed, c.Failed, c.Engine, c.Model, c.Reason)
		}
		if results.ValueOr(c.TTFTMs, 0) <= 0 || results.ValueOr(c.DecodeTokS, 0) <= 0 || c.ISL+c.OSL > 512 {
			t.Errorf("cell %s: ttft %.1f ms, %.1f tok/s, isl+osl %d", c.CellID, results.ValueOr(c.TTFTMs, 0), results.ValueOr(c.DecodeTokS, 0), c.ISL+c.OSL)
		}
		byEndpoint[c.Endpoint] = append(byEndpoint[c.Endpoint], c.Concurrency)
		// The server on the CPU: its process tree (ollama serve and the
		// runner it forks) measured from /proc; Ollama has no metrics
		// endpoint, and this machine no NVML: NULL, with the reasons.
		if results.ValueOr(c.ServerCPUS, 0) <= 0 || results.ValueOr(c.ServerRSSPeakBytes, 0) < 1<<20 {
			t.Errorf("cell %s: server_cpu_s %v, server_rss_peak_bytes %v; want the runner's CPU and memory", c.CellID, results.ValueOr(c.ServerCPUS, -1), results.ValueOr(c.ServerRSSPeakBytes, -1))
		}
		if c.ServerRunningPeak != nil || !strings.Contains(c.Notes, "Ollama exposes no metrics endpoint") {
			t.Errorf("cell %s: server running peak %v, notes %q; want NULL and why", c.CellID, results.ValueOr(c.ServerRunningPeak, -1), c.Notes)
		}
		t.Logf("cell %s: server CPU %.2f s (%.2f cores), waited for a CPU %.1f ms, RSS peak %.0f MiB", c.CellID, results.ValueOr(c.ServerCPUS, 0), results.ValueOr(c.ServerCPUUtil, 0), results.ValueOr(c.ServerCPUWaitMs, -1), float64(results.ValueOr(c.ServerRSSPeakBytes, 0))/(1<<20))
	}
	// Six cells of a CPU engine beside its client on this machine's cores:
	// its threads waited for a CPU in at least one.
	if waited <= 0 {
		t.Errorf("server_cpu_wait_ms 0 on every cell: the runner's threads were not read")
	}
	samples, err := resultstest.ReadTable[results.Sample](run, "samples")
	if err != nil {
		t.Fatal(err)
	}
	procSamples := 0
	for _, s := range samples {
		if s.Source == "proc" {
			procSamples++
		}
	}
	if procSamples == 0 {
		t.Errorf("no proc samples among %d samples", len(samples))
	}
	if fmt.Sprint(byEndpoint["completions"]) != "[1 2 4]" || fmt.Sprint(byEndpoint["chat"]) != "[1 2 4]" {
		t.Errorf("ladders: %v", byEndpoint)
	}
	for _, f := range []string{"server.log", "server.after_start-0.log", "health.log", "warmup.log", "Modelfile"} {
		if _, err := os.Stat(filepath.Join(run, f)); err != nil {
			t.Errorf("run directory: %v", err)
		}
	}
	if !strings.Contains(b.stderr.String(), "warmup: TTFT settled") && !strings.Contains(b.stderr.String(), "did not settle") {
		t.Errorf("the warm-up says nothing about TTFT settling:\n%s", b.stderr.String())
	}
}

// TestOllamaServerKilledMidSweep kills the server after the first cell:
// the running cell is an error with the exit status, later cells are
// skipped with the reason, finished cells stay on disk, exit 3, and
// nothing of the server (its runner included) is left.
func TestOllamaServerKilledMidSweep(t *testing.T) {
	dir := ollamaDir(t)
	modelPresent(t)
	b := startBenchrun(t, dir, "testdata/ollama-fault.cue", "-t", "requests=100")
	run := waitFirstCell(t, b)
	pid, pgid := ollamaServe(run)
	if pid == 0 {
		t.Fatal("no ollama serve found")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := b.wait(t, time.Minute); code != 3 {
		t.Fatalf("exit %d, want 3\n%s", code, b.stderr.String())
	}
	rows := csvRows(t, b.stdout.String())
	if len(rows) != 3 {
		t.Fatalf("rows:\n%s", b.stdout.String())
	}
	if rows[0]["status"] != "ok" {
		t.Errorf("first cell: %v", rows[0])
	}
	if rows[1]["status"] != "error" || !strings.Contains(rows[1]["reason"], "server died: signal: killed") {
		t.Errorf("running cell: status %q reason %q", rows[1]["status"], rows[1]["reason"])
	}
	if rows[2]["status"] != "skipped" || !strings.Contains(rows[2]["reason"], "not run: server died: signal: killed") {
		t.Errorf("later cell: status %q reason %q", rows[2]["status"], rows[2]["reason"])
	}
	cells, err := resultstest.ReadTable[results.Cell](run, "cells")
	if err != nil || len(cells) != 3 || cells[0].Status != "ok" || cells[0].Completed != 100 {
		t.Fatalf("cells on disk: %d, %v", len(cells), err)
	}
	if left := procruntest.LiveInGroup(pgid); len(left) > 0 {
		t.Errorf("the server's process group %d still has %v", pgid, left)
	}
	if left := processesOf(run); len(left) > 0 {
		t.Errorf("orphans: %v", left)
	}
}

func TestOllamaWrongModelName(t *testing.T) {
	dir := ollamaDir(t)
	modelPresent(t)
	start := time.Now()
	b := startBenchrun(t, dir, "testdata/ollama-fault.cue", "-t", "model=tales")
	if code := b.wait(t, time.Minute); code != 3 {
		t.Fatalf("exit %d\n%s", code, b.stderr.String())
	}
	want := `"tales" is not among the models http://127.0.0.1:`
	if !strings.Contains(b.stderr.String(), want) || !strings.Contains(b.stderr.String(), `serves ["stories:latest"]: the plan's model name (model.name, or model in the stage) must equal the server's served name`) {
		t.Fatalf("stderr lacks the clear error:\n%s", b.stderr.String())
	}
	if d := time.Since(start); d > 40*time.Second {
		t.Errorf("took %s: a wrong name must fail at once, not at the health timeout (60s)", d)
	}
}

func TestOllamaNeverHealthy(t *testing.T) {
	dir := ollamaDir(t)
	modelPresent(t)
	b := startBenchrun(t, dir, "testdata/ollama-fault.cue", "-t", "health_path=/not-a-health-path", "-t", "within=3s")
	if code := b.wait(t, time.Minute); code != 3 {
		t.Fatalf("exit %d\n%s", code, b.stderr.String())
	}
	if !strings.Contains(b.stderr.String(), "not ready within 3s; last check: /not-a-health-path answered 404") {
		t.Errorf("stderr:\n%s", b.stderr.String())
	}
	var m struct {
		Stages []struct{ Name, Status, Reason string }
	}
	raw, err := os.ReadFile(filepath.Join(b.runDir(t), "manifest.json"))
	if err != nil || json.Unmarshal(raw, &m) != nil {
		t.Fatalf("manifest: %v", err)
	}
	for _, s := range m.Stages {
		if s.Name == "health" {
			if s.Status != "failed" || !strings.Contains(s.Reason, "last lines of the server's log:\n  | ") || !strings.Contains(s.Reason, `"/not-a-health-path"`) {
				t.Errorf("health: %s: %s", s.Status, s.Reason)
			}
			return
		}
	}
	t.Error("no health stage in the manifest")
}

// TestOllamaDiesWithBenchrun SIGKILLs benchrun itself mid-sweep: ollama
// serve and the runner it started must both be gone.
func TestOllamaDiesWithBenchrun(t *testing.T) {
	dir := ollamaDir(t)
	modelPresent(t)
	b := startBenchrun(t, dir, "testdata/ollama-fault.cue", "-t", "requests=100")
	var run string
	waitFor(t, b, 2*time.Minute, "the sweep to start", func() bool {
		dirs, _ := filepath.Glob(filepath.Join(b.out, "plan=*", "date=*", "run=*"))
		if len(dirs) == 1 {
			run = dirs[0]
		}
		// The runner is up once the model has answered the health probe.
		return run != "" && len(processesOf(run)) >= 3 && strings.Contains(b.stderr.String(), "▶ sweep")
	})
	before := processesOf(run)
	var names []string
	for _, pid := range before {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		names = append(names, strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " "))
	}
	if !strings.Contains(strings.Join(names, "\n"), "ollama runner") {
		t.Fatalf("no ollama runner among %q", names)
	}
	t.Logf("killing benchrun with %d processes of the run up:\n%s", len(before), strings.Join(names, "\n"))
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	b.cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for len(processesOf(run)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("before the kill %v; still running: %v", before, processesOf(run))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOllamaInterrupted stops benchrun with SIGINT (Ctrl-C) and with
// SIGTERM (a CI job cancelled) mid-sweep: exit 130, the finished cells
// readable on disk, and ollama serve and its runner stopped, none left.
func TestOllamaInterrupted(t *testing.T) {
	dir := ollamaDir(t)
	modelPresent(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			b := startBenchrun(t, dir, "testdata/ollama-fault.cue", "-t", "requests=100")
			run := waitFirstCell(t, b)
			_, pgid := ollamaServe(run)
			start := time.Now()
			if err := b.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if code := b.wait(t, time.Minute); code != 130 {
				t.Fatalf("exit %d, want 130\n%s", code, b.stderr.String())
			}
			t.Logf("%s: benchrun exited 130 after %s", sig, time.Since(start).Round(time.Millisecond))
			if cells := readCells(t, run); len(cells) < 1 || cells[0].Status != "ok" {
				t.Errorf("cells on disk: %+v", cells)
			}
			if left := procruntest.LiveInGroup(pgid); pgid == 0 || len(left) > 0 {
				t.Errorf("the server's process group %d still has %v", pgid, left)
			}
			if left := processesOf(run); len(left) > 0 {
				t.Errorf("orphans: %v", left)
			}
		})
	}
}
