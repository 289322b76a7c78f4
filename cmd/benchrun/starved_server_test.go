//go:build linux

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
)

// starvedServerPlan launches the simulator pinned to CPU 0 as the child of
// a shell that waits for it (the server is the guard's grandchild, as a
// wrapper script's server is), with a check a starved simulator fails.
const starvedServerPlan = `name: "starved-server"
model: {name: "sim"}
stages: {
	server: {
		kind: "launch"
		cmd: ["sh", "-c", "taskset -c 0 benchrun sim --addr 127.0.0.1:${port} --model sim --mode fixed --ttft 5ms --itl 2ms --eos-prob 0 & wait"]
	}
	health: {kind: "health", target: "server"}
	sweep: {
		kind:        "sweep"
		target:      "server"
		needs:       ["health"]
		cells:       [{isl: 16, osl: 64}]
		concurrency: [4]
		requests:    48
		warmup:      0
		calibrate:   "off"
		assert: ["itl_p99_ms < 2*itl_p50_ms"]
	}
}
`

// startHogs starts n `sha256sum /dev/zero` pinned to CPU cpu, each killed
// (and waited for) when the test ends.
func startHogs(t *testing.T, n int, cpu string) {
	t.Helper()
	for range n {
		cmd := exec.Command("taskset", "-c", cpu, "sha256sum", "/dev/zero")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
		})
	}
}

// runPinned runs plan with benchrun (the client) pinned to CPU cpu, into
// a runs folder of its label, and
// returns its row (the measurement its checks judged) and its stderr.
func runPinned(t *testing.T, dir, bin, plan, cpu, label string) (results.Cell, string) {
	t.Helper()
	runs := filepath.Join(dir, "runs-"+label)
	cmd := exec.Command("taskset", "-c", cpu, os.Args[0], plan, "--out", runs)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BENCHRUN_TEST_AS_MAIN=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(runs, "*", "*", "*"))
	if len(dirs) != 1 {
		t.Fatalf("run directories %v\n%s", dirs, stderr.String())
	}
	rd, err := rundir.Open(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	cells, err := rd.Cells()
	if err != nil || len(cells) == 0 {
		t.Fatalf("%d cells, %v\n%s", len(cells), err, stderr.String())
	}
	// The judged one: an inconclusive check is measured once more.
	judged := cells[0]
	for _, c := range cells[1:] {
		if c.Measurement > judged.Measurement {
			judged = c
		}
	}
	return judged, stderr.String()
}

// TestStarvedServerIsTheServersWait: server_cpu_wait_ms is the server's
// own threads' wait, read from the launched tree whatever wraps it. The
// simulator runs pinned to CPU 0, a grandchild of the launch stage's
// shell; benchrun, the client, runs pinned to CPU 1. Beside eight
// `sha256sum /dev/zero` pinned to CPU 0 the server's wait rises well
// over its wait without them (twice and more: the machine is not idle
// without them), and over the client's
// wait in the same cell (the client's CPU has no hogs). Had the column
// read the guard or the shell (both sleep) it would not rise; had it read
// the client's threads, it would not exceed the client's wait. The
// check a starved simulator fails (its gaps' p99 against twice their
// median) is inconclusive with the server's wait in the reason, or
// passes; never a failure.
func TestStarvedServerIsTheServersWait(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator beside CPU-bound processes")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs: one for the server and its neighbours, one for the client")
	}
	dir, bin, plan := simPlanDir(t, starvedServerPlan)
	quiet, _ := runPinned(t, dir, bin, plan, "1", "quiet")
	startHogs(t, 8, "0")
	busy, stderr := runPinned(t, dir, bin, plan, "1", "busy")
	for _, c := range []struct {
		name string
		c    results.Cell
	}{{"no neighbours", quiet}, {"8 neighbours on the server's CPU", busy}} {
		if c.c.ServerCPUWaitMs == nil || c.c.ClientCPUWaitMs == nil {
			t.Fatalf("%s: server_cpu_wait_ms %v, client_cpu_wait_ms %v: not measured (%s)", c.name, c.c.ServerCPUWaitMs, c.c.ClientCPUWaitMs, c.c.Notes)
		}
		t.Logf("%s: server waited %.1f ms, client %.1f ms for a CPU over a %.2f s cell; itl p50 %.2f ms, p99 %.2f ms; machine late p99 %.2f ms",
			c.name, *c.c.ServerCPUWaitMs, *c.c.ClientCPUWaitMs, c.c.DurationS, results.ValueOr(c.c.ITLP50Ms, -1), results.ValueOr(c.c.ITLP99Ms, -1), results.ValueOr(c.c.MachineLateP99Ms, -1))
	}
	sw, cw, sq := *busy.ServerCPUWaitMs, *busy.ClientCPUWaitMs, *quiet.ServerCPUWaitMs
	// Without the hogs the machine is not idle (a test run, other
	// work): the rise asked for is twice, not tenfold.
	if sw < 2*sq+20 {
		t.Errorf("server_cpu_wait_ms %.1f beside 8 hogs on its CPU against %.1f without: want at least 2× + 20 ms (did it read the server's threads?)", sw, sq)
	}
	if sw < 3*cw {
		t.Errorf("server_cpu_wait_ms %.1f against the client's %.1f on a CPU without hogs: want at least 3×", sw, cw)
	}
	if strings.Contains(stderr, "✗ assertion") {
		t.Errorf("a starved server's check failed instead of inconclusive:\n%s", stderr)
	}
	if busy.ServerCPUWaitMs != nil && strings.Contains(stderr, "? assertion") && !strings.Contains(stderr, "the server's threads waited") {
		t.Errorf("an inconclusive check without the server's wait in its reason:\n%s", stderr)
	}
}
