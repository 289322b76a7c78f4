//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/internal/testkit"
)

func init() {
	// A command that crashes, for TestPanicIsAnInternalError (in the
	// re-executed test binary as in the test itself).
	testCommands = append(testCommands, command{name: "test-panic", run: func(context.Context, []string, io.Writer, io.Writer) error {
		panic("boom in test-panic")
	}}, command{name: "test-fatal", run: func(context.Context, []string, io.Writer, io.Writer) error {
		// A Go runtime fatal error: never recoverable, always exit 2 in
		// the process that has it.
		var m = map[int]int{}
		done := make(chan bool)
		for g := 0; g < 4; g++ {
			go func() {
				for i := 0; ; i++ {
					m[i%8] = i
				}
			}()
		}
		<-done
		return nil
	}})
}

// TestSecondInterruptForcesExitAndKillsServers runs benchrun with a server
// that ignores SIGINT and SIGTERM (so the first Ctrl-C's orderly stop
// waits out a long grace), interrupts twice, and checks that benchrun
// exits 130 within seconds and that the server and its children are
// gone, one in a session of its own included.
func TestSecondInterruptForcesExitAndKillsServers(t *testing.T) {
	dir := t.TempDir()
	plan := `name: "hard"
model: {name: "m"}
stages: {
	server: {
		kind: "launch"
		cmd: ["sh", "-c", "trap '' INT TERM; echo $$ > pid; sleep 60 & echo $! > sleeppid; setsid sh -c 'trap : INT TERM; echo $$ > daemonpid; while :; do sleep 0.1; done' & wait"]
		dir: "` + dir + `"
		stop_grace: "30s"
	}
	hold: {kind: "health", target: "http://127.0.0.1:9", needs: ["server"], within: "60s", interval: "100ms"}
}
`
	if err := os.WriteFile(filepath.Join(dir, "plan.cue"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(os.Args[0], "plan.cue")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BENCHRUN_TEST_AS_MAIN=1")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	sleepPID := testkit.WaitPID(t, filepath.Join(dir, "sleeppid"))
	shPID := testkit.WaitPID(t, filepath.Join(dir, "pid"))
	// A child in a session of its own, ignoring signals: only a walk of
	// benchrun's descendants finds it once its guard is killed.
	daemonPID := testkit.WaitPID(t, filepath.Join(dir, "daemonpid"))
	defer syscall.Kill(daemonPID, syscall.SIGKILL)
	time.Sleep(300 * time.Millisecond) // hold is polling
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	// The orderly stop now waits on a server that ignores its signals.
	select {
	case err := <-exited:
		t.Fatalf("benchrun exited after one interrupt although its server ignores signals (%v):\n%s", err, stderr.String())
	case <-time.After(700 * time.Millisecond):
	}
	second := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if took := time.Since(second); took > 3*time.Second {
			t.Errorf("forced exit took %s after the second interrupt", took)
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("exit = %v, want status 130", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("benchrun still running 10s after the second interrupt:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "second interrupt") {
		t.Errorf("stderr does not say why it exited at once:\n%s", stderr.String())
	}
	for _, pid := range []int{shPID, sleepPID, daemonPID} {
		deadline := time.Now().Add(2 * time.Second)
		for !testkit.Gone(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !testkit.Gone(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("process %d of the server's group outlived benchrun", pid)
		}
	}
}

// benchrunCmd is this test binary acting as benchrun in dir.
func benchrunCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BENCHRUN_TEST_AS_MAIN=1")
	return cmd
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("wait: %v", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

// runDir is the one run directory under dir/runs.
func runDir(t *testing.T, dir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "runs", "plan=*", "date=*", "run=*"))
	if len(m) != 1 {
		t.Fatalf("run directories: %v", m)
	}
	return m[0]
}

// TestClosedStdoutStopsTheCSVNotTheRun: `benchrun PLAN | head -2` with a
// real pipe whose reader goes away after two lines. benchrun must not die
// of SIGPIPE (exit 141): the sweep goes on, every cell is measured and
// stored, the report is written, stderr says once that stdout closed,
// and the exit code is the run's.
func TestClosedStdoutStopsTheCSVNotTheRun(t *testing.T) {
	dir := t.TempDir()
	plan := `name: "pipe"
model: {name: "sim"}
stages: {
	server: {kind: "launch", cmd: ["benchrun", "sim", "--addr", "127.0.0.1:${port}", "--model", "sim", "--mode", "fixed", "--ttft", "2ms", "--itl", "1ms"]}
	health: {kind: "health", target: "server"}
	sweep: {kind: "sweep", target: "server", needs: ["health"], cells: [{isl: 16, osl: 8}], concurrency: [1, 2, 3, 4], requests: 4, warmup: 0}
}
`
	if err := os.WriteFile(filepath.Join(dir, "plan.cue"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := benchrunCmd(dir, "plan.cue")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	br := bufio.NewReader(r)
	for i := 0; i < 2; i++ { // head -2: the header and the first row
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatalf("line %d: %v\n%s", i+1, err, stderr.String())
		}
	}
	r.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("benchrun still running 60s after its stdout closed:\n%s", stderr.String())
	}
	if code := exitCode(t, werr); code != 0 {
		t.Fatalf("exit %d, want 0 (the run's own):\n%s", code, stderr.String())
	}
	if n := strings.Count(stderr.String(), "benchrun: stdout closed"); n != 1 {
		t.Errorf("stderr says %d times that stdout closed:\n%s", n, stderr.String())
	}
	rd := runDir(t, dir)
	csv, _ := os.ReadFile(filepath.Join(rd, "cells.csv"))
	if rows := strings.Count(strings.TrimSpace(string(csv)), "\n"); rows != 4 {
		t.Errorf("cells.csv has %d rows, want every one of the 4 points:\n%s", rows, csv)
	}
	for _, f := range []string{"result.json", "report.md"} {
		if _, err := os.Stat(filepath.Join(rd, f)); err != nil {
			t.Errorf("no %s: %v", f, err)
		}
	}
}

// TestHangupAndQuitAreInterrupts: SIGHUP (a closed terminal) and SIGQUIT
// take the interrupt path as SIGTERM does: the running stage is cancelled,
// the finally stage and the outputs run, the server stops, exit 130 (not
// 129, or Go's 2 for SIGQUIT, the "invalid plan" code). SIGQUIT first dumps
// every goroutine's stack on stderr.
func TestHangupAndQuitAreInterrupts(t *testing.T) {
	for _, tt := range []struct {
		sig  syscall.Signal
		want []string
	}{
		{syscall.SIGHUP, []string{"interrupted by SIGHUP"}},
		{syscall.SIGQUIT, []string{"benchrun: SIGQUIT: the stacks of every goroutine follow", "goroutine ", "interrupted by SIGQUIT"}},
	} {
		t.Run(tt.sig.String(), func(t *testing.T) {
			dir, cmd, stderr := startPlan(t, `name: "sig"
model: {name: "sim"}
stages: {
	server: {kind: "launch", cmd: ["benchrun", "sim", "--addr", "127.0.0.1:${port}", "--model", "sim", "--mode", "fixed", "--ttft", "5ms", "--itl", "50ms"]}
	health: {kind: "health", target: "server"}
	sweep: {kind: "sweep", target: "server", needs: ["health"], cells: [{isl: 16, osl: 2000}], concurrency: [1], requests: 2, warmup: 0}
	post: {kind: "health", target: "server", needs: ["sweep"], finally: true}
}
`)
			waitFor(t, dir, "runs/*/*/*/sweep.log", "the sweep never started", 20*time.Second, stderr)
			time.Sleep(300 * time.Millisecond) // measuring
			if err := cmd.Process.Signal(tt.sig); err != nil {
				t.Fatal(err)
			}
			if code := waitExit(t, cmd, 30*time.Second, stderr); code != 130 {
				t.Errorf("exit %d, want 130:\n%s", code, stderr.String())
			}
			for _, want := range append(tt.want, "  post ") {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
			rd := runDir(t, dir)
			manifest, _ := os.ReadFile(filepath.Join(rd, "manifest.json"))
			if !strings.Contains(string(manifest), `"status": "interrupted"`) {
				t.Errorf("manifest:\n%s", manifest)
			}
			if _, err := os.Stat(filepath.Join(rd, "report.md")); err != nil {
				t.Errorf("no report: %v", err)
			}
		})
	}
}

// TestPanicIsAnInternalError: a crash exits 4 with the panic and its
// stack on stderr, never 2 (the plan or the command line is invalid).
func TestPanicIsAnInternalError(t *testing.T) {
	cmd := benchrunCmd(t.TempDir(), "test-panic")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	code := exitCode(t, cmd.Run())
	if code != 4 {
		t.Errorf("exit %d, want 4", code)
	}
	for _, want := range []string{"benchrun: internal error (a bug in benchrun, please report it): panic: boom in test-panic", "goroutine "} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// A Go fatal error (here concurrent map writes) exits 2 in the process
// that has it, the code of an invalid plan; the supervisor turns the
// worker's crash into 4, an internal error, and says so.
func TestFatalErrorIsAnInternalError(t *testing.T) {
	cmd := benchrunCmd(t.TempDir(), "test-fatal")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	code := exitCode(t, cmd.Run())
	if code != 4 {
		t.Errorf("exit %d, want 4\n%s", code, stderr.String())
	}
	for _, want := range []string{"fatal error: concurrent map writes", "benchrun: internal error (a bug in benchrun, please report it): the run crashed with a Go fatal error"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
}

// children lists the process ids whose parent is pid (each thread's
// children: a Go program starts processes from any of its threads).
func children(pid int) []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, w := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(w); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

const longSweepPlan = `name: "sig"
model: {name: "sim"}
stages: {
	server: {kind: "launch", cmd: ["benchrun", "sim", "--addr", "127.0.0.1:${port}", "--model", "sim", "--mode", "fixed", "--ttft", "5ms", "--itl", "50ms"]}
	health: {kind: "health", target: "server"}
	sweep: {kind: "sweep", target: "server", needs: ["health"], cells: [{isl: 16, osl: 4}, {isl: 16, osl: 2000}], concurrency: [1], requests: 2, warmup: 0}
}
`

// TestKilledWorkerIsACrash: the run's worker killed outright (SIGKILL,
// as the out-of-memory killer does) gives no word of its own; the
// supervisor says what happened and where the finished rows are, marks
// the run crashed in its manifest, and exits 4.
func TestKilledWorkerIsACrash(t *testing.T) {
	dir, cmd, stderr := startPlan(t, longSweepPlan)
	// The first cell is on disk and the second is being measured.
	waitFor(t, dir, "runs/*/*/*/cells/*.parquet", "no cell finished", 30*time.Second, stderr)
	workers := children(cmd.Process.Pid)
	if len(workers) != 1 {
		t.Fatalf("the supervisor has children %v, want its one worker", workers)
	}
	if err := syscall.Kill(workers[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	code := waitExit(t, cmd, 30*time.Second, stderr)
	rd := runDir(t, dir)
	if code != 4 {
		t.Errorf("exit %d, want 4:\n%s", code, stderr.String())
	}
	for _, want := range []string{"the run's worker was killed by SIGKILL (out of memory?", "every finished row is in " + rd} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	m, err := rundir.ReadManifest(rd)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != rundir.RunCrashed || m.ExitCode == nil || *m.ExitCode != 4 || !strings.Contains(m.Reason, "SIGKILL") {
		t.Errorf("manifest: status %q exit %v reason %q; want crashed, 4, the signal", m.Status, m.ExitCode, m.Reason)
	}
	if a := m.AttemptRecords(); len(a) != 1 || a[0].Status != rundir.RunCrashed {
		t.Errorf("attempts %+v, want the one attempt crashed", a)
	}
	if cells, _ := filepath.Glob(filepath.Join(rd, "cells", "*.parquet")); len(cells) < 1 {
		t.Errorf("the finished cell is gone")
	}
}

// TestEarlyInterruptIs130: a SIGTERM that reaches the supervisor as soon
// as its worker exists, before the worker took its own handlers, is an
// interrupt like any other: exit 130 (it was 143, the worker killed by
// the forwarded signal).
func TestEarlyInterruptIs130(t *testing.T) {
	_, cmd, stderr := startPlan(t, longSweepPlan)
	for deadline := time.Now().Add(10 * time.Second); len(children(cmd.Process.Pid)) == 0; time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatal("no worker started")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, 30*time.Second, stderr); code != 130 {
		t.Errorf("exit %d, want 130:\n%s", code, stderr.String())
	}
}

// TestUnreadStdoutNeverStallsTheRun: `benchrun PLAN | less` with the pager
// paused: a pipe (shrunk to one page) that nobody reads. The run measures
// every point and ends as it would with a reader (before: it stopped
// between cells at the first row the pipe would not take, the server
// kept up); the CSV it could not deliver is in cells.csv, and stderr says
// so.
func TestUnreadStdoutNeverStallsTheRun(t *testing.T) {
	dir := t.TempDir()
	plan := `name: "paused"
model: {name: "sim"}
stages: {
	server: {kind: "launch", cmd: ["benchrun", "sim", "--addr", "127.0.0.1:${port}", "--model", "sim", "--mode", "fixed", "--ttft", "1ms", "--itl", "0ms"]}
	health: {kind: "health", target: "server"}
	sweep: {kind: "sweep", target: "server", needs: ["health"], cells: [for i in [8, 16, 24, 32, 40, 48, 56, 64] {isl: i, osl: 2}], concurrency: [1, 2, 3, 4], requests: 2, warmup: 0, calibrate: "off"}
}
`
	if err := os.WriteFile(filepath.Join(dir, "plan.cue"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	// Wide rows, so that the 32 rows outgrow the 4 KiB pipe whatever the
	// notes hold (stdout says each note once per stage).
	cmd := benchrunCmd(dir, "plan.cue", "--columns", "run_id,cell_id,plan,stage,model,engine,engine_version,hardware,started_at,isl,osl,concurrency,ttft_ms,itl_p50_ms,status")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const fSetPipeSz = 1031 // F_SETPIPE_SZ
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, w.Fd(), fSetPipeSz, 4096); errno != 0 {
		t.Fatalf("shrinking the pipe: %v", errno)
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("benchrun still running 90 s with its stdout unread:\n%s", stderr.String())
	}
	if code := exitCode(t, werr); code != 0 {
		t.Fatalf("exit %d, want 0 (the run's own):\n%s", code, stderr.String())
	}
	rd := runDir(t, dir)
	csv, _ := os.ReadFile(filepath.Join(rd, "cells.csv"))
	if rows := strings.Count(strings.TrimSpace(string(csv)), "\n"); rows != 32 {
		t.Errorf("cells.csv has %d rows, want every one of the 32 points", rows)
	}
	if !strings.Contains(stderr.String(), "benchrun: stdout did not take the last") {
		t.Errorf("stderr does not say the CSV was not delivered:\n%s", stderr.String())
	}
}

// startPlan writes plan into a new directory and starts benchrun on it,
// its stderr captured; the process is killed when the test ends.
func startPlan(t *testing.T, plan string) (dir string, cmd *exec.Cmd, stderr *lockedBuffer) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "plan.cue"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd = benchrunCmd(dir, "plan.cue")
	stderr = &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return dir, cmd, stderr
}

// waitFor waits until glob (under dir) matches a file, failing the test
// with what, and stderr, after limit.
func waitFor(t *testing.T, dir, glob, what string, limit time.Duration, stderr *lockedBuffer) {
	t.Helper()
	for deadline := time.Now().Add(limit); ; time.Sleep(50 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(dir, glob)); len(m) >= 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s:\n%s", what, stderr.String())
		}
	}
}

// waitExit waits up to limit for cmd to end and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd, limit time.Duration, stderr *lockedBuffer) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return exitCode(t, err)
	case <-time.After(limit):
		t.Fatalf("still running after %v:\n%s", limit, stderr.String())
		return 0
	}
}

// TestKilledSupervisorLeavesNoServer: benchrun's supervisor SIGKILLed
// (the out-of-memory killer, a lost CI runner) at any moment of a launch
// leaves no server behind: its worker dies with it (parent-death signal),
// and the guard takes the server down, having heard the worker's death
// or, where its signal came before the guard could take it, seen it
// (twice in a few dozen kills on a loaded machine a simulator lived on).
// Kills land from the first milliseconds (the guard starting) to a server
// serving, beside two spinning processes.
func TestKilledSupervisorLeavesNoServer(t *testing.T) {
	if testing.Short() {
		t.Skip("kills benchrun 16 times")
	}
	for range 2 {
		spin := exec.Command("sh", "-c", "while :; do :; done")
		if err := spin.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = spin.Process.Kill(); _ = spin.Wait() })
	}
	marker := fmt.Sprintf("BENCHRUN_ORPHAN_CHECK=%d", os.Getpid())
	plan := strings.Replace(longSweepPlan, `server: {kind: "launch", `, `server: {kind: "launch", env: {BENCHRUN_ORPHAN_CHECK: "`+strconv.Itoa(os.Getpid())+`"}, `, 1)
	if plan == longSweepPlan {
		t.Fatal("the plan has no launch stage to mark")
	}
	const kills = 16
	var left []string
	for i := range kills {
		dir, cmd, stderr := startPlan(t, plan)
		if i < kills/2 {
			time.Sleep(time.Duration(i) * 40 * time.Millisecond) // from the start to the launch
		} else {
			waitFor(t, dir, "runs/*/*/*/server.log", "no server log", 30*time.Second, stderr)
			time.Sleep(time.Duration(i-kills/2) * 30 * time.Millisecond)
		}
		if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitExit(t, cmd, 10*time.Second, stderr)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			pids := marked(marker)
			if len(pids) == 0 {
				break
			}
			if time.Now().After(deadline) {
				left = append(left, fmt.Sprintf("kill %d: processes %v still run 10 s after the supervisor was killed", i, pids))
				for _, pid := range pids {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				break
			}
		}
	}
	if len(left) > 0 {
		t.Errorf("%d of %d kills left a server:\n%s", len(left), kills, strings.Join(left, "\n"))
	}
}

// marked lists the live processes whose environment holds marker.
func marked(marker string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
				continue // a zombie: dead, its parent not yet told
			}
		}
		out = append(out, pid)
	}
	return out
}
