package machine

import "github.com/benchrun/benchrun/internal/results"

// The lateness probe is a sleeper: the kernel wakes it promptly even when
// CPU-bound neighbours hold every core, so it misses what they do to the
// client's and a local server's busy threads. Their own run-queue wait
// (client_cpu_wait_ms, server_cpu_wait_ms: how long their threads were
// runnable but waited for a CPU over the timed window) is that starvation.
// Starved and StarvedBound turn it into what it could have done to a
// metric, beside the probe's lateness (Allowance). The SLO search's
// saturation call takes it; a row-level check does not: these bounds sum
// every thread's wait and grow as a cell's requests get fewer, so on a
// machine shared with CPU-bound processes they would excuse any miss,
// a tenfold slowdown included (docs/METRICS.md).

// starvedWait is the larger of the client's and the local server's CPU
// wait over the row's window, in ms; 0 when neither was measured.
func starvedWait(c *results.Cell) float64 {
	if c == nil {
		return 0
	}
	return max(results.ValueOr(c.ClientCPUWaitMs, 0), results.ValueOr(c.ServerCPUWaitMs, 0), 0)
}

// Starved is how much CPU starvation could have added to a latency of row
// c, in ms, at the statistic metric takes. A thread that waited w ms
// delayed the requests in flight while it waited, so the waits add at
// most wait × in-flight ms over the row's n requests: a mean of
// wait × in-flight / n, and (Markov) at most half the requests got more
// than twice that, which bounds a median. A tail or a max may have taken
// the whole wait.
func Starved(metric string, c *results.Cell) float64 {
	wait := starvedWait(c)
	if wait <= 0 {
		return 0
	}
	if LateStat(metric) != "p50" {
		return wait
	}
	n := float64(max(c.Completed, c.Requests))
	if n <= 0 {
		return wait
	}
	inflight := float64(c.Concurrency)
	if inflight <= 0 && c.ReqS != nil && c.E2ELP50Ms != nil {
		inflight = *c.ReqS * *c.E2ELP50Ms / 1000 // an open loop's (Little's law)
	}
	return min(wait, 2*wait*max(inflight, 1)/n)
}

// StarvedBound is what the machine allowed a verdict on metric of row c,
// with the probe's lateness at late: the larger of what that lateness
// (Allowance) and what the CPU starvation of the client's and server's
// threads (Starved) could account for. A throughput's starvation: the
// requests could have been served as much faster as the share of the
// window the threads waited.
func StarvedBound(metric string, c *results.Cell, late float64) Bound {
	b := Allowance(metric, c, late)
	starved := Starved(metric, c)
	if starved <= 0 {
		return b
	}
	s := Allowance(metric, c, starved)
	if v, _ := throughput(metric, c); v > 0 && c.DurationS > 0 {
		f := min(starvedWait(c)/(1000*c.DurationS), 0.9)
		s = Bound{Up: v * f / (1 - f)}
	}
	return Bound{Down: max(b.Down, s.Down), Up: max(b.Up, s.Up)}
}
