//go:build !linux

package procrun

import "syscall"

// No parent-death signal outside Linux: the guard still leads the group,
// so a normal stop reaches every process of the program.
func guardSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// No child subreaper outside Linux: an orphan leaves the guard's tree.
func becomeSubreaper() error { return nil }
