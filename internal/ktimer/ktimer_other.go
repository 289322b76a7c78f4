//go:build !linux

package ktimer

import "context"

// newKernelTimer: no precise timer here; the runtime's timers are used.
func newKernelTimer(context.Context) kernelTimer { return nil }
