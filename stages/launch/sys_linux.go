package launch

import "syscall"

// The guard leads its own process group and gets guardDeathSignal when
// benchrun dies, however it dies.
func guardSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: guardDeathSignal}
}
