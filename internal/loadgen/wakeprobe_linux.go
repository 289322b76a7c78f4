//go:build linux

package loadgen

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sleepThread sleeps d in the kernel on this thread: the wake is the
// kernel's, not the Go runtime's timers (which poll with millisecond
// timeouts when the process is idle).
func sleepThread(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.Nanosleep(&ts, nil)
}

// childSysProcAttr makes a helper child die with this process however
// it dies.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
