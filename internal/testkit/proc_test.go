package testkit

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestGone: a running child is not gone; once it exited it is, reaped or
// not (a zombie); this process never is.
func TestGone(t *testing.T) {
	if Gone(os.Getpid()) {
		t.Fatal("this process is gone")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	pid := cmd.Process.Pid
	if Gone(pid) {
		t.Fatal("a running child is gone")
	}
	_ = cmd.Process.Kill()
	WaitFor(t, 5*time.Second, "the killed child, unreaped, gone", func() bool { return Gone(pid) })
	_ = cmd.Wait()
	WaitGone(t, "the reaped child", pid)
}
