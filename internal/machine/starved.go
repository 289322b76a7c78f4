package machine

import (
	"fmt"

	"github.com/benchrun/benchrun/internal/results"
)

// The lateness probe is a sleeper: the kernel wakes it promptly even when
// CPU-bound neighbours hold every core, so it misses what they do to the
// client's and a local server's busy threads. Their own run-queue wait
// (client_cpu_wait_ms, server_cpu_wait_ms: how long their threads were
// runnable but waited for a CPU over the timed window) is that starvation.
// Starved and StarvedBound turn it into what it could have done to a
// metric, beside the probe's lateness (Allowance). The SLO search's
// saturation call takes both waits. A row-level check and the baseline
// take the local server's alone (JudgeBound; ServerStarvedBeyond, only
// the wait beyond the history's usual): the client's own lateness is the
// probe's to bound. Each bound takes a statistic's share of the values
// (Markov's inequality: a median at most twice the mean delay, a p99
// of 2,480 gaps at most a hundred times it), not every tail the whole
// wait; a tail of few values (a p99 of 8 requests is their max) still
// may have taken all of it, and beside CPU-bound neighbours such a check
// is inconclusive rather than failed (docs/METRICS.md).

// starvedWait is the larger of the client's and the local server's CPU
// wait over the row's window, in ms; 0 when neither was measured.
func starvedWait(c *results.Cell) float64 {
	if c == nil {
		return 0
	}
	return max(results.ValueOr(c.ClientCPUWaitMs, 0), results.ValueOr(c.ServerCPUWaitMs, 0), 0)
}

// StarvedWait is the larger of the client's and the local server's CPU
// wait over row c's window, in ms (0: neither measured): what a
// history's runs are compared by to tell a night starved of CPU.
func StarvedWait(c *results.Cell) float64 { return starvedWait(c) }

// StarvedBeyond is what the CPU starvation of row c beyond usual ms of
// wait (a history's median StarvedWait) could have done to metric: the
// bound StarvedBound gives when only the extra wait counts, and no
// probe lateness. Zero when the row waited no longer than usual.
func StarvedBeyond(metric string, c *results.Cell, usual float64) Bound {
	extra := starvedWait(c) - max(usual, 0)
	if c == nil || extra <= 0 {
		return Bound{}
	}
	cc := *c
	cc.ClientCPUWaitMs, cc.ServerCPUWaitMs = nil, &extra
	return StarvedBound(metric, &cc, 0)
}

// Starved is how much CPU starvation could have added to a latency of row
// c, in ms, at the statistic metric takes (starvedBy with the larger of
// the client's and the server's wait).
func Starved(metric string, c *results.Cell) float64 {
	return starvedBy(metric, c, starvedWait(c))
}

// starvedBy is how much wait ms of a thread's waiting for a CPU could
// have added to metric of row c, at the statistic it takes. A thread
// that waited w ms delayed the values in flight while it waited (a
// request each for a request latency, a gap each for a gap), so the
// waits add at most wait × in-flight ms over the row's n values: a mean
// moves by at most wait × in-flight / n, and (Markov) at most a share
// 1 − q of the values got more than wait × in-flight / (n (1 − q)),
// which bounds the percentile q (twice the mean for a median; a p99 of
// few values, and a max, may have taken the whole wait).
func starvedBy(metric string, c *results.Cell, wait float64) float64 {
	if wait <= 0 || c == nil {
		return 0
	}
	q := quantile(metric)
	n := float64(max(c.Completed, c.Requests))
	if r := rule(metric); r == results.LateGap || r == results.LateGapRatio {
		if t := outputTokens(c); t > 1 {
			n *= t - 1
		}
	}
	if q >= 1 || n <= 0 {
		return wait
	}
	inflight := float64(c.Concurrency)
	if inflight <= 0 && c.ReqS != nil && c.E2ELP50Ms != nil {
		inflight = *c.ReqS * *c.E2ELP50Ms / 1000 // an open loop's (Little's law)
	}
	share := 1 - q // the values at and above the percentile
	if q <= 0 {
		share = 1 // a mean
	}
	return min(wait, wait*max(inflight, 1)/(n*share))
}

// StarvedBound is what the machine allowed a verdict on metric of row c,
// with the probe's lateness at late: the larger of what that lateness
// (Allowance) and what the CPU starvation of the client's and server's
// threads (Starved) could account for. A throughput's starvation: the
// requests could have been served as much faster as the share of the
// window the threads waited.
func StarvedBound(metric string, c *results.Cell, late float64) Bound {
	b := Allowance(metric, c, late)
	s := starvedBound(metric, c, starvedWait(c))
	return Bound{Down: max(b.Down, s.Down), Up: max(b.Up, s.Up)}
}

// starvedBound is what wait ms of CPU wait over row c's window could
// have done to metric: a latency by starvedBy through its lateness rule
// (Allowance); a throughput could have been as much faster as the share
// of the window the threads waited.
func starvedBound(metric string, c *results.Cell, wait float64) Bound {
	if c != nil && c.DurationS > 0 {
		// The waits are summed over threads, which wait side by side:
		// no value was held up for longer than the window itself.
		wait = min(wait, 1000*c.DurationS)
	}
	starved := starvedBy(metric, c, wait)
	if starved <= 0 {
		return Bound{}
	}
	if v, _ := throughput(metric, c); v > 0 && c.DurationS > 0 {
		f := min(wait/(1000*c.DurationS), 0.9)
		return Bound{Up: v * f / (1 - f)}
	}
	return Allowance(metric, c, starved)
}

// A server on this machine shares its CPUs with whatever else runs
// here, and its own threads' wait for a CPU during a cell
// (server_cpu_wait_ms) is what the machine did to it: the judge allows
// for it as for the probe's lateness (JudgeBound). The column is
// measured only for a server benchrun launched on this machine (a
// launch stage without `host`: its process tree is read from /proc by
// the pid the stage hands the sweep; a remote launch and a server
// restarted per cell hand none, and a server benchrun did not launch has
// no pid), so a server elsewhere never gets this allowance, and a
// server slower on a quiet machine (little wait) gets next to none.

// serverWait is the local server's CPU wait over row c's window, in ms;
// 0 when not measured (the server is not on this machine).
func serverWait(c *results.Cell) float64 {
	if c == nil {
		return 0
	}
	return max(results.ValueOr(c.ServerCPUWaitMs, 0), 0)
}

// ServerStarvedBound is what the local server's threads' wait for a CPU
// during row c's window could have done to metric (zero when the
// server is not on this machine or did not wait).
func ServerStarvedBound(metric string, c *results.Cell) Bound {
	return starvedBound(metric, c, serverWait(c))
}

// ServerStarvedBeyond is what the local server's wait beyond usual ms
// (a history's median server_cpu_wait_ms) could have done to metric.
func ServerStarvedBeyond(metric string, c *results.Cell, usual float64) Bound {
	return starvedBound(metric, c, serverWait(c)-max(usual, 0))
}

// ServerWait is the local server's CPU wait over row c's window, in ms
// (0: not measured, the server is not on this machine).
func ServerWait(c *results.Cell) float64 { return serverWait(c) }

// JudgeBound is how far the machine may have moved column name of row c
// for a check against a fixed limit: the larger of what the probe's
// lateness (Allowance at LateOn) and the local server's CPU wait
// (ServerStarvedBound) could account for.
func JudgeBound(name string, c *results.Cell) Bound {
	b := Allowance(name, c, LateOn(name, c))
	s := ServerStarvedBound(name, c)
	return Bound{Down: max(b.Down, s.Down), Up: max(b.Up, s.Up)}
}

// DescribeServer is the local server's part of a reason when its wait
// for a CPU could move column name of row c: "; the server's threads
// waited 840 ms for a CPU during the 10.0 s cell"; "" otherwise.
func DescribeServer(name string, c *results.Cell) string {
	if ServerStarvedBound(name, c).Zero() {
		return ""
	}
	return fmt.Sprintf("; the server's threads waited %.0f ms for a CPU during the %.1f s cell (server_cpu_wait_ms)", serverWait(c), c.DurationS)
}
