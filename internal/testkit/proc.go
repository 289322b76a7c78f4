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

// WaitPID reads the pid a child wrote to the file at path, waiting up to
// ten seconds for it to appear (a child writes it once it runs).
func WaitPID(t testing.TB, path string) int {
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

// CPUTime is this process's user+system CPU time, and with children its
// waited-for children's too (getrusage); false when it cannot be read.
func CPUTime(children bool) (time.Duration, bool) {
	who := []int{syscall.RUSAGE_SELF}
	if children {
		who = append(who, syscall.RUSAGE_CHILDREN)
	}
	var total time.Duration
	for _, w := range who {
		var ru syscall.Rusage
		if err := syscall.Getrusage(w, &ru); err != nil {
			return 0, false
		}
		total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return total, true
}
