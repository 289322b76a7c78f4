package procrun

import (
	"os"
	"syscall"
)

// KillChildGroups SIGKILLs every descendant of this process (a server
// child that started its own session included: once its guard is killed,
// it would be nobody's to kill), then the process group of every direct
// child that leads its own group (launched servers do: Setpgid), so that
// a forced exit leaves no server or server child behind. It reads /proc
// and never blocks.
func KillChildGroups() {
	self := os.Getpid()
	KillDescendants(self)
	for _, p := range readProcs() {
		if p.ppid != self {
			continue
		}
		if p.pgrp == p.pid {
			_ = syscall.Kill(-p.pgrp, syscall.SIGKILL)
		} else {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
}
