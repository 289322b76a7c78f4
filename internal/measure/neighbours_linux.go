//go:build linux

package measure

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is /proc/stat's unit, USER_HZ: 100 on every Linux benchrun
// runs on.
const clockTick = 10 * time.Millisecond

// machineBusy is the time all CPUs spent busy since boot (/proc/stat's
// cpu line: user, nice, system, irq, softirq, steal).
func machineBusy() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, false
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, true
}

// selfCPU is this process's CPU time and its waited-for children's.
func selfCPU() (time.Duration, bool) {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err != nil {
			return 0, false
		}
		total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return total, true
}
