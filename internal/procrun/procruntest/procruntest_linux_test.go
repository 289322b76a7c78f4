//go:build linux

package procruntest

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestLiveInGroup: a process that leads its own group is listed while it
// runs, and not once it is a zombie (killed, not yet reaped).
func TestLiveInGroup(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	if got := LiveInGroup(pid); !slices.Equal(got, []int{pid}) {
		t.Errorf("running: %v, want [%d]", got, pid)
	}
	_ = cmd.Process.Kill()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if state, _, ok := parseStat(string(b)); ok && state == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed process never became a zombie")
		}
	}
	if got := LiveInGroup(pid); len(got) > 0 {
		t.Errorf("a zombie: %v, want none", got)
	}
}

func TestParseStat(t *testing.T) {
	state, pgrp, ok := parseStat("42 (a ) b (c)) S 1 40 40 0 -1")
	if !ok || state != 'S' || pgrp != 40 {
		t.Errorf("got %c %d %v, want S 40 true", state, pgrp, ok)
	}
	if _, _, ok := parseStat("42 no parenthesis"); ok {
		t.Error("a line without the command's parentheses parsed")
	}
}
