//go:build !linux

package machine

import (
	"syscall"
	"time"
)

// sleepThread sleeps d (elsewhere than Linux through the Go runtime's
// timers; the probe process is otherwise idle).
func sleepThread(d time.Duration) { time.Sleep(d) }

// childSysProcAttr: a helper child ends when its stdin closes.
func childSysProcAttr() *syscall.SysProcAttr { return nil }
