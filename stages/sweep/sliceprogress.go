package sweep

import (
	"fmt"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/measure"
)

// sliceProgressMin is the shortest timed pass that says on stderr, at
// every slice, what it has done so far: a soak of an hour shows in a log
// (or under the live line) as it goes, not only when its row comes.
var sliceProgressMin = time.Minute

// sliceEvery is how often a timed pass of dur says so: the plan's slice
// (0: dur over measure.AutoSlices), at most 100 lines a pass and at
// least a second apart.
func sliceEvery(slice, dur time.Duration) time.Duration {
	every := slice
	if every <= 0 {
		every = dur / measure.AutoSlices
	}
	return max(every, dur/100, time.Second).Round(time.Second)
}

// sliceLines prints a line per slice of a timed pass of dur until stop is
// called: the slice's finished and failed requests and its rate, the
// pass's so far, and the time left.
func (v *pointView) sliceLines(c *loadgen.Counters, dur time.Duration) (stop func()) {
	every := sliceEvery(v.slice, dur)
	n := int((dur + every - 1) / every)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		start := time.Now()
		tick := time.NewTicker(every)
		defer tick.Stop()
		var lastDone, lastFailed int64
		for k := 1; ; k++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			d, f := c.Done.Load(), c.Failed.Load()
			v.p.line(sliceLine(v.counter()+" "+v.label, k, n, every, d-lastDone, f-lastFailed, d, dur-time.Since(start)))
			lastDone, lastFailed = d, f
		}
	}()
	return func() { close(done); <-stopped }
}

// sliceLine is one slice's progress line.
func sliceLine(label string, k, n int, every time.Duration, done, failed, total int64, left time.Duration) string {
	from, to := time.Duration(k-1)*every, time.Duration(k)*every
	return fmt.Sprintf("%s timed: slice %d/%d (%s–%s): %d done (%.1f req/s), %d failed; %d done in all, %s left",
		label, k, n, from, to, done, float64(done)/every.Seconds(), failed, total, max(left, 0).Round(time.Second))
}
