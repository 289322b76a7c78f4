//go:build linux

package machine

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// CPUWait is how long process pid's threads (0: this process) have spent
// runnable but waiting for a CPU, summed over the threads alive now
// (/proc/PID/task/*/schedstat's run_delay); false when the kernel does
// not keep scheduler statistics or the process is gone. A sleeping
// probe's lateness misses this: the kernel wakes a sleeper promptly while
// the busy threads of a client or a server wait their turn beside
// CPU-bound neighbours.
func CPUWait(pid int) (time.Duration, bool) {
	w := TaskWaits{}
	if !w.add(pid) {
		return 0, false
	}
	var total time.Duration
	for _, d := range w {
		total += d
	}
	return total, true
}

// TaskWaits is a reading of run_delay (the time spent runnable, waiting
// for a CPU) of every thread of some processes, by thread id.
type TaskWaits map[int]time.Duration

// ReadTaskWaits reads the threads of every process of pids: a server's
// whole tree (a launched server's pid is its guard's, which sleeps; the
// server's threads are in its descendants, and a server may fork
// workers). False when no thread could be read.
func ReadTaskWaits(pids []int) (TaskWaits, bool) {
	w := TaskWaits{}
	read := false
	for _, pid := range pids {
		if pid > 0 && w.add(pid) {
			read = true
		}
	}
	return w, read
}

// add reads process pid's threads (0: this process) into w.
func (w TaskWaits) add(pid int) bool {
	dir := "/proc/self/task"
	if pid > 0 {
		dir = "/proc/" + strconv.Itoa(pid) + "/task"
	}
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	read := false
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // a thread that ended meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		w[tid] = time.Duration(ns)
		read = true
	}
	return read
}

// WaitedSince is how long the threads waited since the earlier reading: a
// thread read both times counts its growth, a thread born since counts
// whole (its run_delay began at its birth). A thread that ended between
// the readings is lost, at most its own wait in between: a sum over the
// threads alive at each end would instead count the dead thread's whole
// life against the window, or go negative.
func (w TaskWaits) WaitedSince(earlier TaskWaits) time.Duration {
	var total time.Duration
	for tid, d := range w {
		if e, ok := earlier[tid]; ok {
			d -= e
		}
		total += max(d, 0)
	}
	return total
}
