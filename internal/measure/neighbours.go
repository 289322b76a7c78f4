package measure

import "time"

// A CPUWindow measures how much of the machine's CPU other processes
// used over a stretch of time: the machine's busy time (all CPUs) less
// this process's and its waited-for children's. It tells a precision
// check run on a quiet machine from one run beside neighbours (a compile,
// other test binaries), which the lateness probe alone cannot: a load of
// the check's own makes the machine late too.
type CPUWindow struct {
	at         time.Time
	busy, self time.Duration
	ok         bool
}

// StartCPUWindow opens a window now.
func StartCPUWindow() CPUWindow {
	busy, ok1 := machineBusy()
	self, ok2 := selfCPU()
	return CPUWindow{at: time.Now(), busy: busy, self: self, ok: ok1 && ok2}
}

// Others is the CPU other processes used since the window opened, in
// cores (1 = one core busy the whole time); false where it cannot be
// read (not Linux).
func (w CPUWindow) Others() (float64, bool) {
	busy, ok1 := machineBusy()
	self, ok2 := selfCPU()
	wall := time.Since(w.at)
	if !w.ok || !ok1 || !ok2 || wall <= 0 {
		return 0, false
	}
	others := (busy - w.busy) - (self - w.self)
	return max(others.Seconds()/wall.Seconds(), 0), true
}
