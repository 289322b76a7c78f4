package procrun

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// The guard leads its own process group and gets guardDeathSignal when
// benchrun dies, however it dies.
func guardSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: guardDeathSignal}
}

// becomeSubreaper makes the guard the parent of every orphan below it: a
// child that daemonizes (forks, setsid, parent exits) is re-parented
// to the guard instead of init, so the guard still finds and kills it.
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}
