//go:build !linux

package provision

import "syscall"

// commandSysProcAttr: no parent-death signal outside Linux; each command
// still leads its own group, so a timeout or Ctrl-C kills all of it.
func commandSysProcAttr(phase string) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
