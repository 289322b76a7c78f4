//go:build linux

package telemetry

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// The helper processes are this test binary run again with
// procHelperEnv set: a real process tree, whose CPU and memory the test
// decides, read through the real /proc.
const procHelperEnv = "BENCHRUN_PROC_HELPER"

// TestProcHelperProcess is not a test: it is the helper's body, run in a
// child process. Its modes:
//   - "tree:N": start a child "tree:N-1" (N > 0) and wait for it, then
//     idle (at N = 1 with BENCHRUN_PROC_ORPHAN: exit at the go file);
//     at N = 0 become the leaf, BENCHRUN_PROC_LEAF.
//   - leaf "burn": write ready, wait for the go file, spin until 300 ms of
//     its own CPU, write done, then idle (or exit if BENCHRUN_PROC_EXIT).
//   - leaf "alloc": allocate and touch 64 MiB, write ready, idle.
//   - leaf "idle": write ready, idle.
//
// Every helper idles at most a minute, so none outlives a killed test.
func TestProcHelperProcess(t *testing.T) {
	mode := os.Getenv(procHelperEnv)
	if mode == "" {
		return
	}
	dir := os.Getenv("BENCHRUN_PROC_DIR")
	idle := func() { time.Sleep(time.Minute); os.Exit(0) }
	var depth int
	if _, err := fmt.Sscanf(mode, "tree:%d", &depth); err == nil && depth > 0 {
		cmd := procHelperCmd(fmt.Sprintf("tree:%d", depth-1), dir)
		cmd.Env = append(cmd.Env, "BENCHRUN_PROC_LEAF="+os.Getenv("BENCHRUN_PROC_LEAF"), "BENCHRUN_PROC_EXIT="+os.Getenv("BENCHRUN_PROC_EXIT"))
		if err := cmd.Start(); err != nil {
			os.Exit(3)
		}
		if depth == 1 && os.Getenv("BENCHRUN_PROC_ORPHAN") != "" {
			// Orphan the leaf when the window is open (the go file): it
			// is re-parented out of the tree, and this process is reaped
			// by its parent.
			for !procExists(filepath.Join(dir, "go")) {
				time.Sleep(2 * time.Millisecond)
			}
			os.Exit(0)
		}
		_ = cmd.Wait() // reaps the child: its CPU moves to our cutime
		idle()
	}
	touch := func(name string) { _ = os.WriteFile(filepath.Join(dir, name), nil, 0o644) }
	switch os.Getenv("BENCHRUN_PROC_LEAF") {
	case "burn":
		touch("ready")
		for !procExists(filepath.Join(dir, "go")) {
			time.Sleep(2 * time.Millisecond)
		}
		from := procSelfCPU()
		for x := 0; procSelfCPU()-from < 300*time.Millisecond; x++ {
			for i := 0; i < 10000; i++ {
				x ^= i * x
			}
		}
		touch("done")
		if os.Getenv("BENCHRUN_PROC_EXIT") != "" {
			os.Exit(0)
		}
	case "alloc":
		mem := make([]byte, 64<<20)
		for i := 0; i < len(mem); i += 4096 {
			mem[i] = 1
		}
		touch("ready")
		time.Sleep(time.Minute)
		runtime.KeepAlive(mem)
		os.Exit(0)
	default:
		touch("ready")
	}
	idle()
}

func procSelfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func procExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func procHelperCmd(mode, dir string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestProcHelperProcess$")
	// GORACE: a -race binary otherwise sleeps a second at exit, and the
	// exiting leaf must be gone (and reaped) at once.
	cmd.Env = append(os.Environ(), procHelperEnv+"="+mode, "BENCHRUN_PROC_DIR="+dir, "GORACE=atexit_sleep_ms=0")
	return cmd
}

// startProcTree starts a helper tree of depth levels above a leaf and waits
// for the leaf to be ready; the whole tree is killed at the test's end.
func startProcTree(t *testing.T, depth int, leaf string, exit bool, env ...string) (cmd *exec.Cmd, dir string) {
	t.Helper()
	dir = t.TempDir()
	cmd = procHelperCmd(fmt.Sprintf("tree:%d", depth), dir)
	cmd.Env = append(cmd.Env, "BENCHRUN_PROC_LEAF="+leaf)
	if exit {
		cmd.Env = append(cmd.Env, "BENCHRUN_PROC_EXIT=1")
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		if cmd.ProcessState == nil { // not reaped by the test itself
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
	})
	procWaitFile(t, filepath.Join(dir, "ready"))
	return cmd, dir
}

func procWaitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !procExists(path) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newTestProcProbe(t *testing.T, pid int, interval time.Duration) Probe {
	t.Helper()
	p, err := NewProcProbe(pid, interval)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func procMaxSample(samples []results.Sample, metric string) float64 {
	var m float64
	for _, s := range samples {
		if s.Metric == metric {
			m = max(m, s.Value)
		}
	}
	return m
}

// Only the leaf burns CPU, two levels below the root (the root and the
// middle process wait on their children): the window's CPU is the leaf's
// 300 ms, so the walk down the ppid links found it. When the leaf exits and
// its parent reaps it, its CPU is still counted, through the parent's
// cutime/cstime. When the middle process exits and the leaf is orphaned
// (re-parented to init), the leaf stays tracked.
func TestProcCPUOfDescendants(t *testing.T) {
	for _, tc := range []struct {
		name     string
		exit     bool
		orphan   bool
		procsEnd float64 // processes at End
	}{
		{"leaf lives", false, false, 3},
		{"leaf exits and is reaped", true, false, 2},
		{"leaf orphaned", false, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var env []string
			if tc.orphan {
				env = append(env, "BENCHRUN_PROC_ORPHAN=1")
			}
			cmd, dir := startProcTree(t, 2, "burn", tc.exit, env...)
			if tc.orphan {
				// The leaf is no child of ours: kill it by its pgid too
				// (it inherited the root's).
				pgid := cmd.Process.Pid
				t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
			}
			pid := cmd.Process.Pid
			p := newTestProcProbe(t, pid, 50*time.Millisecond)
			ctx := context.Background()
			p.Begin(ctx, "c1")
			if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			procWaitFile(t, filepath.Join(dir, "done"))
			time.Sleep(100 * time.Millisecond) // the exiting leaf is reaped
			var row results.Cell
			samples, note := p.End(ctx, &row)
			if note != "" {
				t.Fatalf("note %q", note)
			}
			if row.ServerCPUS == nil || row.ServerCPUUtil == nil || row.ServerRSSPeakBytes == nil {
				t.Fatalf("columns not filled: %+v", row)
			}
			cpu, util := *row.ServerCPUS, *row.ServerCPUUtil
			t.Logf("server_cpu_s %.3f server_cpu_util %.3f rss_peak %d samples %d", cpu, util, *row.ServerRSSPeakBytes, len(samples))
			if cpu < 0.25 || cpu > 0.6 {
				t.Errorf("server_cpu_s %.3f, want about 0.3 (the leaf's burn)", cpu)
			}
			// The window is the burn's wall time plus ~100 ms: at most one
			// core busy, and not far under one unless the host is loaded.
			if util < 0.05 || util > 1.3 {
				t.Errorf("server_cpu_util %.3f, want at most about one core", util)
			}
			if got := samples[0].Value; samples[0].Metric != "cpu_s" || got != 0 {
				t.Errorf("first sample %+v, want cpu_s 0", samples[0])
			}
			if got := samples[2]; got.Metric != "processes" || got.Value != 3 {
				t.Errorf("processes at Begin %+v, want 3", got)
			}
			for _, s := range samples {
				if s.Source != "proc" || s.Device != "pid:"+strconv.Itoa(pid) || s.CellID != "c1" || s.At.IsZero() {
					t.Fatalf("sample %+v", s)
				}
			}
			if last := samples[len(samples)-1]; last.Metric != "processes" || last.Value != tc.procsEnd {
				t.Errorf("processes at End %+v, want %v", last, tc.procsEnd)
			}
		})
	}
}

// The leaf, below the root, holds 64 MiB resident: the tree's peak RSS is
// at least that, and at least 60 MiB more than the same tree with an idle
// leaf (a -race helper alone is tens of MiB, so ≥ 64 MiB alone would not
// prove the leaf was counted).
func TestProcRSSPeak(t *testing.T) {
	peak := func(leaf string) (int64, []results.Sample) {
		cmd, _ := startProcTree(t, 1, leaf, false)
		p := newTestProcProbe(t, cmd.Process.Pid, 20*time.Millisecond)
		ctx := context.Background()
		p.Begin(ctx, "c1")
		time.Sleep(100 * time.Millisecond)
		var row results.Cell
		samples, note := p.End(ctx, &row)
		if note != "" || row.ServerRSSPeakBytes == nil {
			t.Fatalf("note %q, rss %v", note, row.ServerRSSPeakBytes)
		}
		return *row.ServerRSSPeakBytes, samples
	}
	idle, _ := peak("idle")
	rss, samples := peak("alloc")
	t.Logf("server_rss_peak_bytes %.1f MiB with the 64 MiB leaf, %.1f MiB idle; %d samples", float64(rss)/(1<<20), float64(idle)/(1<<20), len(samples))
	if rss < 64<<20 || rss-idle < 60<<20 {
		t.Errorf("server_rss_peak_bytes %d (idle tree %d), want ≥ 64 MiB and ~64 MiB over idle", rss, idle)
	}
	if got := procMaxSample(samples, "rss_bytes"); int64(got) != rss {
		t.Errorf("rss_bytes samples peak at %v, column %d", got, rss)
	}
}

// A server gone before End, before Begin, or never there: NULL columns and
// a note, for every cell, and the probe goes on.
func TestProcGoneServer(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, p Probe, want string) {
		t.Helper()
		var row results.Cell
		_, note := p.End(ctx, &row)
		t.Logf("note: %s", note)
		if row.ServerCPUS != nil || row.ServerCPUUtil != nil || row.ServerRSSPeakBytes != nil {
			t.Errorf("columns filled for a gone server: %+v", row)
		}
		if note == "" || !strings.Contains(note, want) {
			t.Errorf("note %q, want it to say %q", note, want)
		}
	}
	// kill kills the helper and reaps it: its pid is gone from /proc.
	kill := func(cmd *exec.Cmd) {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}

	t.Run("exits before End", func(t *testing.T) {
		cmd, _ := startProcTree(t, 0, "idle", false)
		p := newTestProcProbe(t, cmd.Process.Pid, 20*time.Millisecond)
		p.Begin(ctx, "c1")
		time.Sleep(50 * time.Millisecond)
		kill(cmd)
		time.Sleep(50 * time.Millisecond)
		check(t, p, "exited during the window")
		p.Begin(ctx, "c2")
		check(t, p, "not running")
	})
	t.Run("gone before Begin", func(t *testing.T) {
		cmd, _ := startProcTree(t, 0, "idle", false)
		kill(cmd)
		p := newTestProcProbe(t, cmd.Process.Pid, 20*time.Millisecond)
		p.Begin(ctx, "c1")
		check(t, p, "not running")
	})
	t.Run("never existed", func(t *testing.T) {
		// pid_max is at most 2^22: no process can have this pid.
		p := newTestProcProbe(t, 1<<22+1, 20*time.Millisecond)
		p.Begin(ctx, "c1")
		check(t, p, "not running")
		var row results.Cell
		if _, note := p.End(ctx, &row); note == "" {
			t.Error("End without Begin: no note")
		}
	})
	if _, err := NewProcProbe(0, 0); err == nil {
		t.Error("pid 0 accepted")
	}
}

// End stops the sampler at once (well within one interval) and leaves no
// goroutine behind, nor does Close with a window open.
func TestProcEndIsPromptAndClean(t *testing.T) {
	cmd, _ := startProcTree(t, 0, "idle", false)
	ctx := context.Background()
	before := runtime.NumGoroutine()
	const interval = 500 * time.Millisecond
	p, err := NewProcProbe(cmd.Process.Pid, interval)
	if err != nil {
		t.Fatal(err)
	}
	p.Begin(ctx, "c1")
	time.Sleep(interval + 100*time.Millisecond) // the sampler is between ticks
	start := time.Now()
	var row results.Cell
	samples, note := p.End(ctx, &row)
	took := time.Since(start)
	t.Logf("End took %v, %d samples", took, len(samples))
	if note != "" || row.ServerCPUS == nil {
		t.Fatalf("note %q, cpu %v", note, row.ServerCPUS)
	}
	if took > interval/2 {
		t.Errorf("End took %v, interval %v", took, interval)
	}
	p.Begin(ctx, "c2")
	p.Begin(ctx, "c3") // a Begin without End drops the open window
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	p.Begin(ctx, "c4") // after Close: nothing starts
	if _, note := p.End(ctx, &row); note == "" {
		t.Error("End after Close: no note")
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Close, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestProcSlowScanKeepsCoresPossible: a reading is stamped with the time
// the tree was read, not when a slow scan of every process ended. Every
// other scan here takes 200 ms more after reading the tree (a loaded
// machine's scan of a long process table); a spinning shell uses one core
// at most, and no sample may say more than the machine has (378 cores on
// 2 were reported when readings were stamped after the scan).
func TestProcSlowScanKeepsCoresPossible(t *testing.T) {
	spin := exec.Command("sh", "-c", "while :; do :; done")
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = spin.Process.Kill(); _ = spin.Wait() })
	calls := 0
	procAfterScan = func() {
		calls++
		if calls%2 == 0 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	t.Cleanup(func() { procAfterScan = func() {} })
	p := newTestProcProbe(t, spin.Process.Pid, 20*time.Millisecond)
	ctx := context.Background()
	p.Begin(ctx, "c1")
	time.Sleep(1500 * time.Millisecond)
	var row results.Cell
	samples, note := p.End(ctx, &row)
	if note != "" {
		t.Fatal(note)
	}
	n, most := 0, 0.0
	for _, s := range samples {
		if s.Metric == "cpu_cores" {
			n++
			most = max(most, s.Value)
		}
	}
	limit := float64(runtime.NumCPU()) + 0.25
	t.Logf("%d readings, the most %.2f cores; the window's mean %.2f", n, most, *row.ServerCPUUtil)
	if n < 3 || most > limit {
		t.Errorf("%d cpu_cores readings, the most %.2f cores: a process on %d CPUs uses at most %.2f", n, most, runtime.NumCPU(), limit)
	}
	if u := *row.ServerCPUUtil; u > 1.1 {
		t.Errorf("server_cpu_util %.2f for one spinning shell", u)
	}
}
