//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine/machinetest"

	"github.com/benchrun/benchrun/schema"
)

// slowPlan writes a valid plan of about size bytes whose helper list
// takes CUE a long time (quadratic in its length: about 30 s at 1 MiB).
func slowPlan(t *testing.T, dir string, size int) string {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("name: \"big\"\nstages: h: {kind: \"health\", target: \"http://127.0.0.1:1\"}\nfiller: [\n")
	line := "\t1234567890, 1234567890, 1234567890, 1234567890, 1234567890,\n"
	for b.Len()+len(line)+2 < size {
		b.WriteString(line)
	}
	b.WriteString("]\n")
	path := filepath.Join(dir, "big.cue")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// asBenchrun is this test binary acting as benchrun (TestMain) in dir.
func asBenchrun(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BENCHRUN_TEST_AS_MAIN=1")
	return cmd
}

// startBenchrun starts asBenchrun with its stderr captured; exited
// receives Wait's error.
func startBenchrun(t *testing.T, dir string, args ...string) (*exec.Cmd, *bytes.Buffer, chan error) {
	t.Helper()
	var stderr bytes.Buffer
	cmd := asBenchrun(dir, args...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return cmd, &stderr, exited
}

func exitStatus(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("wait: %v", err)
	return -1
}

// TestOversizePlanIsRefusedAtOnce: a plan over the limit is refused, with
// its size and the limit, before it is read (a 50 MB plan took six
// minutes), by vet and by a run alike: exit 2.
func TestOversizePlanIsRefusedAtOnce(t *testing.T) {
	dir := t.TempDir()
	path := slowPlan(t, dir, 5<<20)
	for _, args := range [][]string{{"vet", path}, {path, "--dry-run"}, {path}} {
		start := time.Now()
		cmd, stderr, exited := startBenchrun(t, dir, args...)
		var werr error
		select {
		case werr = <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("%v: still loading the oversize plan after 10 s", args)
			continue
		}
		code := exitStatus(t, werr)
		took := time.Since(start)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2:\n%s", args, code, stderr.String())
		}
		if want := path + ": the plan is 5.0 MiB; benchrun loads plans of at most 1.0 MiB (1048576 bytes)"; !strings.Contains(stderr.String(), want) {
			t.Errorf("%v: stderr lacks %q:\n%s", args, want, stderr.String())
		}
		if took > 3*time.Second {
			t.Errorf("%v: refusing took %s", args, took)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "runs")); err == nil {
		t.Errorf("a refused plan created a run directory")
	}
}

// TestSignalStopsAPlanLoading: SIGTERM (and SIGINT) while a large plan is
// still being evaluated ends benchrun at once with exit 130, for a run and
// for vet; the load used to run to its end (minutes) first.
func TestSignalStopsAPlanLoading(t *testing.T) {
	machine := machinetest.Start()
	var slow []string // exits later than 1 s: a quiet machine's claim
	dir := t.TempDir()
	path := slowPlan(t, dir, schema.MaxPlanBytes-1024)
	for _, tc := range []struct {
		sig  syscall.Signal
		args []string
		want string
	}{
		{syscall.SIGTERM, []string{path}, "benchrun: interrupted by SIGTERM while loading " + path + ": nothing was run"},
		{syscall.SIGINT, []string{"vet", path}, "benchrun: interrupted by SIGINT while loading " + path},
		{syscall.SIGTERM, []string{path, "--dry-run"}, "interrupted by SIGTERM while loading"},
	} {
		cmd, stderr, exited := startBenchrun(t, dir, tc.args...)
		// Signalled once it is well into the load: 300 ms of CPU, its own
		// and its loader child's (a busy machine's wall time says nothing
		// of how far it got).
		for worked := false; !worked; {
			select {
			case err := <-exited:
				t.Fatalf("%v: ended before the signal (%v): the plan loads too fast to test this:\n%s", tc.args, err, stderr.String())
			case <-time.After(20 * time.Millisecond):
				worked = treeCPU(cmd.Process.Pid) >= 300*time.Millisecond
			}
		}
		sent := time.Now()
		if err := cmd.Process.Signal(tc.sig); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			took := time.Since(sent)
			if code := exitStatus(t, err); code != 130 {
				t.Errorf("%v: exit %d after %s, want 130:\n%s", tc.args, code, tc.sig, stderr.String())
			}
			if took > time.Second {
				slow = append(slow, fmt.Sprintf("%v: exited %s after %s, want within 1s", tc.args, took, tc.sig))
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, tc.want, stderr.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Fatalf("%v: still loading 10 s after %s:\n%s", tc.args, tc.sig, stderr.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "runs")); err == nil {
		t.Errorf("an interrupted load created a run directory")
	}
	if len(slow) > 0 {
		t.Log(strings.Join(slow, "\n"))
		machine.Judge(t, "benchrun ends within 1 s of the signal")
		t.Error(strings.Join(slow, "\n"))
	}
}

// treeCPU is the CPU time a process and its children have used (user and
// system, from /proc/PID/stat); 0 where it cannot be read.
func treeCPU(pid int) time.Duration {
	var total time.Duration
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 13 {
			continue
		}
		// ppid is field 4 of the line; utime and stime, 14 and 15, in
		// clock ticks (100/s).
		var ppid int
		var ut, st int64
		fmt.Sscan(f[1], &ppid)
		fmt.Sscan(f[11], &ut)
		fmt.Sscan(f[12], &st)
		if e.Name() == strconv.Itoa(pid) || ppid == pid {
			total += time.Duration(ut+st) * 10 * time.Millisecond
		}
	}
	return total
}
