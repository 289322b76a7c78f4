package provision

import "syscall"

// commandSysProcAttr puts each command in its own process group (a timeout
// or Ctrl-C kills the whole group). create and wait also die with
// benchrun, even when it is killed with SIGKILL, so that no process
// outlives it. teardown alone does not: a teardown cut short by benchrun's
// death would leave the machine running and billing, and it ends by itself
// (the cloud CLI returns once the machine is gone).
func commandSysProcAttr(phase string) *syscall.SysProcAttr {
	if phase == "teardown" {
		return &syscall.SysProcAttr{Setpgid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
