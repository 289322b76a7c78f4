package procrun

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/testkit"
)

// TestParseStatOddName: a command name may hold spaces and parentheses;
// the fields are read after the last ')'.
func TestParseStatOddName(t *testing.T) {
	p, ok := parseStat(42, "42 (a (weird) name) S 7 42 42 0 -1")
	if !ok || p.pid != 42 || p.ppid != 7 || p.pgrp != 42 || p.state != 'S' {
		t.Fatalf("got %+v %v", p, ok)
	}
	if _, ok := parseStat(1, "garbage"); ok {
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
	sleepPID := testkit.WaitPID(t, filepath.Join(dir, "sleeppid"))
	KillChildGroups()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the child survived KillChildGroups")
	}
	deadline := time.Now().Add(2 * time.Second)
	for !testkit.Gone(sleepPID) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !testkit.Gone(sleepPID) {
		syscall.Kill(sleepPID, syscall.SIGKILL)
		t.Fatal("the grandchild in the child's group survived")
	}
}
