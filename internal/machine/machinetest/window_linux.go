//go:build linux

package machinetest

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

// procCPU is process pid's CPU time (/proc/PID/stat's utime and stime),
// false once it is gone.
func procCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing parenthesis (the state is field 3).
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	var ticks int64
	for _, k := range []int{14 - 3, 15 - 3} { // utime, stime
		n, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, true
}
