package testkit

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Gone says whether pid no longer runs here: no such process, or one
// that has exited and waits for whoever inherited it to reap it (a
// zombie: state Z, or X, in /proc/PID/stat).
func Gone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// WaitGone polls for up to five seconds until every pid is Gone; then it
// kills the survivors (a failed test leaves no stray process) and fails
// the test, naming what they were.
func WaitGone(t testing.TB, what string, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []int
		for _, pid := range pids {
			if !Gone(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("%s: pids %v still running", what, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitFor polls ok every 20 ms until it holds, and fails the test when it
// does not within the given time, naming what was awaited.
func WaitFor(t testing.TB, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
