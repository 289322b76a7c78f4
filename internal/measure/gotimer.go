package measure

import "time"

// goTimer waits with the Go runtime's timers.
type goTimer struct{}

func (goTimer) waitUntil(due time.Time) { time.Sleep(time.Until(due)) }
