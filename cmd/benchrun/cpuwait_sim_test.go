//go:build linux

package main

import (
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// serverWaitPlan launches a server whose process tree holds more busy
// threads than the machine has CPUs (spinning shells the simulator
// inherits as its children, as a server's workers would be): over any
// window they wait for a CPU at least what the arithmetic forces.
const serverWaitPlan = `name: "server-wait"
model: {name: "sim"}
_spin: *"3" | string @tag(spin)
stages: {
	server: {
		kind: "launch"
		cmd: ["sh", "-c", "i=0; while [ $i -lt " + _spin + " ]; do (while :; do :; done) & i=$((i+1)); done; exec benchrun sim --addr 127.0.0.1:${port} --model sim --mode fixed --ttft 5ms --itl 5ms --eos-prob 0"]
	}
	health: {kind: "health", target: "server"}
	sweep: {
		kind:        "sweep"
		target:      "server"
		needs:       ["health"]
		cells:       [{isl: 16, osl: 64}]
		concurrency: [2]
		requests:    8
		warmup:      0
		calibrate:   "off"
	}
}
`

// TestServerCPUWaitReadsTheServersTree: server_cpu_wait_ms is the
// launched server's own threads' wait for a CPU, not its guard's. With
// NumCPU+1 threads of the server's tree spinning, they wanted NumCPU+1
// cores for the whole window and got at most NumCPU: at least one
// window's worth was waited for (half of it is asked, as the machine's
// other CPU users only add to the wait). Before, the column read the
// guard, which sleeps: 0 on every row.
func TestServerCPUWaitReadsTheServersTree(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator beside spinning threads")
	}
	dir, bin, plan := simPlanDir(t, serverWaitPlan)
	spin := runtime.NumCPU() + 1
	code, stderr, rd := runPlanTagged(t, dir, bin, plan, filepath.Join(dir, "runs"), "spin="+strconv.Itoa(spin))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	cells, err := rd.Cells()
	if err != nil || len(cells) != 1 {
		t.Fatalf("cells %v, %v", cells, err)
	}
	c := cells[0]
	if c.ServerCPUWaitMs == nil {
		t.Fatalf("server_cpu_wait_ms is null (%s)", c.Notes)
	}
	window := c.DurationS * 1000
	t.Logf("server waited %.0f ms for a CPU over a %.0f ms window, %d spinning threads on %d CPUs", *c.ServerCPUWaitMs, window, spin, runtime.NumCPU())
	if *c.ServerCPUWaitMs < window/2 {
		t.Errorf("server_cpu_wait_ms %.1f over a %.0f ms window, want at least %.0f: %d threads of the server's tree spinning on %d CPUs", *c.ServerCPUWaitMs, window, window/2, spin, runtime.NumCPU())
	}
}
