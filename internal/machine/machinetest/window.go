package machinetest

import "time"

// A cpuWindow measures how much of the machine's CPU other processes
// used over a stretch of time: the machine's busy time (all CPUs) less
// this process's and its waited-for children's. It tells a precision
// check run on a quiet machine from one run beside neighbours (a compile,
// other test binaries), which the lateness probe alone cannot: a load of
// the check's own makes the machine late too.
type cpuWindow struct {
	at         time.Time
	busy, self time.Duration
	ok         bool
	// owned are processes counted as this one's (own): their CPU when
	// they were named.
	owned map[int]time.Duration
}

// own counts process pid (a server the check started and has not yet
// waited for) as this process's own from now on: its CPU is the check's
// load, not a neighbour's.
func (w *cpuWindow) own(pid int) {
	c, ok := procCPU(pid)
	if !ok {
		return
	}
	if w.owned == nil {
		w.owned = map[int]time.Duration{}
	}
	w.owned[pid] = c
}

// startCPUWindow opens a window now.
func startCPUWindow() cpuWindow {
	busy, ok1 := machineBusy()
	self, ok2 := selfCPU()
	return cpuWindow{at: time.Now(), busy: busy, self: self, ok: ok1 && ok2}
}

// others is the CPU other processes used since the window opened, in
// cores (1 = one core busy the whole time); false where it cannot be
// read (not Linux).
func (w cpuWindow) others() (float64, bool) {
	busy, ok1 := machineBusy()
	self, ok2 := selfCPU()
	wall := time.Since(w.at)
	if !w.ok || !ok1 || !ok2 || wall <= 0 {
		return 0, false
	}
	others := (busy - w.busy) - (self - w.self)
	for pid, at := range w.owned {
		if c, ok := procCPU(pid); ok && c > at {
			others -= c - at
		}
	}
	return max(others.Seconds()/wall.Seconds(), 0), true
}
