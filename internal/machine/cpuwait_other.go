//go:build !linux

package machine

import "time"

// CPUWait is not measured off Linux.
func CPUWait(int) (time.Duration, bool) { return 0, false }

// TaskWaits is not measured off Linux.
type TaskWaits map[int]time.Duration

// ReadTaskWaits is not measured off Linux.
func ReadTaskWaits([]int) (TaskWaits, bool) { return nil, false }

// WaitedSince is 0 off Linux.
func (w TaskWaits) WaitedSince(TaskWaits) time.Duration { return 0 }
