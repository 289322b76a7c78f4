//go:build linux

package measure

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
	dir := "/proc/self/task"
	if pid > 0 {
		dir = "/proc/" + strconv.Itoa(pid) + "/task"
	}
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, false
	}
	var total time.Duration
	read := 0
	for _, t := range tasks {
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
		total += time.Duration(ns)
		read++
	}
	return total, read > 0
}
