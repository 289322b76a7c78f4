//go:build linux

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSecondInterruptForcesExitAndKillsServers runs benchrun with a server
// that ignores SIGINT and SIGTERM (so the first Ctrl-C's orderly stop
// waits out a long grace), interrupts twice, and checks that benchrun
// exits 130 within seconds and that the server and its child are gone.
func TestSecondInterruptForcesExitAndKillsServers(t *testing.T) {
	dir := t.TempDir()
	plan := `name: "hard"
model: {name: "m"}
stages: {
	server: {
		kind: "launch"
		cmd: ["sh", "-c", "trap '' INT TERM; echo $$ > pid; sleep 60 & echo $! > sleeppid; wait"]
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

	sleepPID := waitPID(t, filepath.Join(dir, "sleeppid"))
	shPID := waitPID(t, filepath.Join(dir, "pid"))
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
	for _, pid := range []int{shPID, sleepPID} {
		deadline := time.Now().Add(2 * time.Second)
		for !gone(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !gone(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("process %d of the server's group outlived benchrun", pid)
		}
	}
}

func waitPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
	return 0
}

// gone: the process no longer exists or is a zombie (exited, unreaped).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

func TestParseStat(t *testing.T) {
	pid, ppid, pgid, ok := parseStat("42 (a (weird) name) S 7 42 42 0 -1")
	if !ok || pid != 42 || ppid != 7 || pgid != 42 {
		t.Fatalf("got %d %d %d %v", pid, ppid, pgid, ok)
	}
	if _, _, _, ok := parseStat("garbage"); ok {
		t.Fatal("garbage parsed")
	}
}

// TestKillChildGroups checks the forced exit's own sweep (launched servers
// also have a guard that kills their group when benchrun dies): a child
// leading its own group, with a grandchild, is killed with the grandchild.
func TestKillChildGroups(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", "sleep 60 & echo $! > "+filepath.Join(dir, "sleeppid")+"; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sleepPID := waitPID(t, filepath.Join(dir, "sleeppid"))
	killChildGroups()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the child survived killChildGroups")
	}
	deadline := time.Now().Add(2 * time.Second)
	for !gone(sleepPID) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !gone(sleepPID) {
		syscall.Kill(sleepPID, syscall.SIGKILL)
		t.Fatal("the grandchild in the child's group survived")
	}
}
