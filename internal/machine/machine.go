package machine

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// Reading is what the machine itself did during one window (a cell's
// timed passes): how late it ran a server-like event loop's task (the
// probe's Loop path; the lateness verdicts judge with), a lone thread
// (Wake), and how much of the window some runnable task waited for a
// CPU (Linux's pressure stall information). Nil: not measured.
type Reading struct {
	LateP50Ms, LateP99Ms, LateMaxMs *float64
	WakeP99Ms                       *float64
	CPUPressurePct                  *float64
}

// Fill writes m into the row's machine_* columns.
func (m Reading) Fill(c *results.Cell) {
	c.MachineLateP50Ms, c.MachineLateP99Ms, c.MachineLateMaxMs = m.LateP50Ms, m.LateP99Ms, m.LateMaxMs
	c.MachineWakeP99Ms, c.MachineCPUPressurePct = m.WakeP99Ms, m.CPUPressurePct
}

// minWindowSamples is the fewest loop samples a window's lateness is
// read from; a shorter window (a cell of a few milliseconds) says
// nothing about the tail, and its columns stay NULL.
const minWindowSamples = 5

// A Window is one measured stretch of time: Begin it when a cell's timed
// passes start and End it when they end.
type Window struct {
	probe *Probe
	id    uint64
	from  time.Time
	psi   time.Duration
	psiOK bool
}

// Begin opens a window on the probe's samples (p may be nil: then only
// the CPU pressure is read). The window folds the samples due from now
// until End (fold.go): End each, or the probe folds for it forever.
func (p *Probe) Begin() Window {
	w := Window{probe: p, from: time.Now()}
	if p != nil {
		w.id = p.open(w.from)
	}
	w.psi, w.psiOK = cpuPressure()
	return w
}

// End closes the window and summarizes it.
func (w Window) End() Reading {
	to := time.Now()
	var m Reading
	if w.psiOK && to.After(w.from) {
		if psi, ok := cpuPressure(); ok && psi >= w.psi {
			m.CPUPressurePct = ptr(100 * min(float64(psi-w.psi)/float64(to.Sub(w.from)), 1))
		}
	}
	if w.probe == nil {
		return m
	}
	f := w.probe.close(w.id)
	if f == nil {
		return m
	}
	if f.loop.n() >= minWindowSamples {
		m.LateP50Ms, m.LateP99Ms, m.LateMaxMs = ptr(f.loop.percentileMs(50)), ptr(f.loop.percentileMs(99)), ptr(f.loop.maxMs())
	}
	if f.wake.n() >= minWindowSamples {
		m.WakeP99Ms = ptr(f.wake.percentileMs(99))
	}
	return m
}

func ptr(x float64) *float64 { return &x }

// cpuPressure is the total time, since boot, in which some runnable task
// waited for a CPU (/proc/pressure/cpu's "some" line); false where the
// kernel does not say (not Linux, PSI off).
func cpuPressure() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0, false
	}
	return parsePressure(string(b))
}

func parsePressure(s string) (time.Duration, bool) {
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "some ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "total="); ok {
				us, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return 0, false
				}
				return time.Duration(us) * time.Microsecond, true
			}
		}
	}
	return 0, false
}

// Late is the machine's lateness a verdict on row c allows for, in ms:
// the probe's loop path p99 during the cell (0 when not measured, which
// explains nothing).
func Late(c *results.Cell) float64 {
	if c == nil || c.MachineLateP99Ms == nil || math.IsNaN(*c.MachineLateP99Ms) {
		return 0
	}
	return max(*c.MachineLateP99Ms, 0)
}

// LateOn is the machine's lateness a verdict on column name of row c
// judged against a fixed limit allows for, in ms. Late (the loop's p99)
// is what one late wake does to each request; a latency column also
// carries the cell's longest stall (machine_late_max_ms, the machine
// standing still) as far as that stall reaches the column's statistic.
// One stall holds up at most k of the n values at once (StallReach):
//
//   - a mean moves by the stall's length × k / n;
//   - a percentile p by its whole length when k ≥ (1 − p/100) × n, as
//     many values as lie at and above that rank (else not at all);
//   - a max by its whole length.
//
// Other columns (throughputs, counts, ratios) take Late.
func LateOn(name string, c *results.Cell) float64 {
	late := Late(c)
	if c == nil || c.MachineLateMaxMs == nil || math.IsNaN(*c.MachineLateMaxMs) || !stallMoves(name) {
		return late
	}
	stall := max(*c.MachineLateMaxMs, 0)
	k, n := StallReach(name, c)
	if n <= 0 {
		return late
	}
	switch q := quantile(name); {
	case q == 1: // a max
		return late + stall
	case q > 0: // a percentile
		if k >= (1-q)*n {
			return late + stall
		}
		return late
	default: // a mean
		return late + stall*min(k, n)/n
	}
}

// stallMoves says whether column name is a latency a stall delays: one
// from a send or a schedule to an event (ttft, e2el, first_call), a gap
// between events (itl) or a request's gaps together (tpot, ntpot): its
// catalogue entry's lateness rule says.
func stallMoves(name string) bool { return rule(name).Stall() }

// rule is column name's lateness rule (LateNone for a name the
// catalogue does not know).
func rule(name string) results.Lateness {
	if c, ok := results.Lookup(name); ok && c.Late != results.LateUnset {
		return c.Late
	}
	return results.LateNone
}

// quantile is column name's statistic: 1 for a max, the percentile's
// fraction, 0 for a mean (results.Column.Quantile).
func quantile(name string) float64 {
	c, _ := results.Lookup(name)
	return c.Quantile
}

// StallReach is how many of the values column name of row c summarizes
// one stall can hold up at once (k), and how many there are (n): a
// request each in flight for a request latency (the concurrency of a
// closed loop; in an open loop those in flight when the stall began and
// those that fell due during it, openLoopReach), a gap each in flight for
// a gap (itl), of every gap the ok requests had.
func StallReach(name string, c *results.Cell) (k, n float64) {
	r := rule(name)
	if r == results.LateFirstCall {
		return 1, 1 // one request, the first
	}
	n = float64(c.Completed)
	k = float64(c.Concurrency)
	if c.Rate > 0 || k <= 0 {
		k = openLoopReach(c, n)
	}
	if r == results.LateGap || r == results.LateGapRatio {
		if t := outputTokens(c); t > 1 {
			n *= t - 1
		}
	}
	return min(k, n), n
}

// openLoopReach is how many requests of an open loop one stall can hold
// up: those in flight when it began (the rate × a request's mean time,
// Little's law) and those that fell due while it lasted (the rate × the
// stall), one more for the edges. Taking every request of the cell let
// one 1 s pause "explain" a server at 400 ms against ttft_p50_ms < 150.
// Without a rate or a request time to count with, every request (n).
func openLoopReach(c *results.Cell, n float64) float64 {
	rate := c.Rate
	if rate <= 0 && c.SentReqS != nil {
		rate = *c.SentReqS // a trace replay: the rate it sent at
	}
	if rate <= 0 || c.E2ELMs == nil || math.IsNaN(*c.E2ELMs) || c.MachineLateMaxMs == nil {
		return n
	}
	held := (max(*c.E2ELMs, 0) + max(*c.MachineLateMaxMs, 0)) / 1000
	return min(math.Ceil(rate*held)+1, n)
}

// LateFor is the machine's lateness a verdict on metric of row c allows
// for, in ms, at the statistic the metric takes: a tail (p90 and up)
// moves with the loop path's p99 (its max for a max), a median, a mean or
// a throughput with its p50, which a few late wakes cannot move. A row
// without the p50 falls back to Late. Late stays the allowance of
// verdicts that judge one cell's rows against a fixed limit (assertions):
// they have no second measurement to tell a tail's wakes from the
// typical one.
func LateFor(metric string, c *results.Cell) float64 {
	if c == nil {
		return 0
	}
	pick := func(p *float64) float64 {
		if p == nil || math.IsNaN(*p) {
			return Late(c)
		}
		return max(*p, 0)
	}
	switch LateStat(metric) {
	case "max":
		return pick(c.MachineLateMaxMs)
	case "p99":
		return Late(c)
	}
	return pick(c.MachineLateP50Ms)
}

// LateStat names the statistic of the machine's lateness LateFor takes
// for metric: "max", "p99" or "p50".
func LateStat(metric string) string {
	switch q := quantile(metric); {
	case q == 1:
		return "max"
	case q >= 0.9:
		return "p99"
	}
	return "p50"
}

// Bound is how far a metric's true value may lie from the value measured
// because the machine ran threads late: Down below it, Up above it, in
// the metric's unit.
type Bound struct{ Down, Up float64 }

// Zero says whether the machine could not have moved the metric.
func (b Bound) Zero() bool { return b.Down == 0 && b.Up == 0 }

// Allowance is the bound on the column name of row c when the machine
// ran threads up to late ms late: what one late wake does to it, by the
// column's lateness rule in the results catalogue (results.Lateness).
//
//   - A latency from the send (ttft, e2el and their percentiles,
//     first_call_ms) ends with the server's write, which a late wake
//     delays: the true value may be up to late below the measured one.
//   - From the schedule (the _sched columns) the client's send may be
//     late too: up to twice that.
//   - A gap between two events (itl) has a late wake at either end: late
//     either way; a percentile that fell among gaps a late read joined
//     to 0 (FellAmongJoined) any amount up.
//   - TPOT spreads its request's two ends over its N_out − 1 gaps:
//     late / (N_out − 1) either way; ntpot over N_out.
//   - The client's own lateness (send_lag, stamp_delay) and the server's
//     own latencies (server_*_ms): up to late below.
//   - A throughput over requests that last D ms each (e2el p50; ttft for
//     prefill) may be up to value × late / D above the measured one.
//
// Anything else (counts, ratios, GPU telemetry, quality) the machine's
// lateness does not explain: a zero Bound.
func Allowance(name string, c *results.Cell, late float64) Bound {
	if late <= 0 || c == nil {
		return Bound{}
	}
	switch rule(name) {
	case results.LateTPOT, results.LateTPOTRatio:
		n := outputTokens(c)
		if n > 1 {
			return Bound{late / (n - 1), late / (n - 1)}
		}
		return Bound{late, late}
	case results.LateNTPOT:
		if n := outputTokens(c); n > 0 {
			return Bound{late / n, late / n}
		}
		return Bound{late, late}
	case results.LateGap, results.LateGapRatio:
		if FellAmongJoined(name, c) {
			// A late read joined the events whose gap this is: the
			// true gap is as long as that read was late, which no
			// probe of the loop bounds.
			return Bound{late, math.Inf(1)}
		}
		return Bound{late, late}
	case results.LateSchedule:
		return Bound{Down: 2 * late}
	case results.LateSend, results.LateFirstCall, results.LateOwn:
		return Bound{Down: late}
	case results.LateThroughput, results.LatePrefill:
		if v, d := throughput(name, c); v > 0 && d > 0 {
			return Bound{Up: v * late / d}
		}
	}
	return Bound{}
}

// throughput is the value of a throughput column of c and how long, in
// ms, the requests it counts last: e2el_p50_ms, or ttft_ms for a
// prefill rate (LatePrefill); 0 for a column that is not one.
func throughput(name string, c *results.Cell) (value, durMs float64) {
	col, ok := results.Lookup(name)
	if !ok || col.Late != results.LateThroughput && col.Late != results.LatePrefill {
		return 0, 0
	}
	d := c.E2ELP50Ms
	if col.Late == results.LatePrefill {
		d = c.TTFTMs
	}
	return results.ValueOr(col.Float(c), 0), results.ValueOr(d, 0)
}

// FellAmongJoined says whether the gap percentile column name of row c
// (itl_p50_ms, itl_tok_p99_ms, ...) fell among gaps that read 0 because
// both their token events came in one socket read: when the share of
// such gaps is at least the percentile, the value is the reads', not
// the server's. Each joined event makes its gap to the one before it 0;
// a request of n events has n − 1 gaps, so the share of gaps is
// events_joined_pct × n / (n − 1), with n the tokens per request (an
// upper bound of its events, so the share is never overstated).
func FellAmongJoined(name string, c *results.Cell) bool {
	p, ok := gapPercentile(name)
	if !ok || c == nil || c.EventsJoinedPct == nil || math.IsNaN(*c.EventsJoinedPct) {
		return false
	}
	share := *c.EventsJoinedPct
	if n := outputTokens(c); n > 1 {
		share *= n / (n - 1)
	}
	return share >= p
}

// gapPercentile is the percentile an itl percentile column reads
// (itl_p50_ms: 50, itl_tok_p99_ms: 99); false for any other column.
func gapPercentile(name string) (float64, bool) {
	c, ok := results.Lookup(name)
	if !ok || c.Late != results.LateGap || c.Quantile <= 0 || c.Quantile >= 1 {
		return 0, false
	}
	return math.Round(1000*c.Quantile) / 10, true // 0.99: 99, exactly
}

// outputTokens is the row's tokens per request: effective_osl, else osl.
func outputTokens(c *results.Cell) float64 {
	if c.EffectiveOSL != nil && *c.EffectiveOSL > 0 {
		return *c.EffectiveOSL
	}
	return float64(c.OSL)
}

// Describe is the machine's part of a reason, in numbers: "the machine
// ran an event loop's tasks up to 7.1 ms late (p99) during the cell, with
// some task waiting for a CPU 96% of it".
func Describe(c *results.Cell) string {
	if c == nil || c.MachineLateP99Ms == nil {
		return "the machine's lateness was not measured"
	}
	s := fmt.Sprintf("the machine ran an event loop's tasks up to %.2f ms late (p99) during the cell", *c.MachineLateP99Ms)
	if c.MachineCPUPressurePct != nil {
		s += fmt.Sprintf(", with some task waiting for a CPU %.0f%% of it", *c.MachineCPUPressurePct)
	}
	return s
}

// DescribeStall is the stall's part of a reason, for a verdict on column
// name that LateOn widened by the cell's longest stall: "and stood still
// for 10321 ms once, which can hold up 4 of its 8 requests at a time";
// "" when the stall did not reach name.
func DescribeStall(name string, c *results.Cell) string {
	if c == nil || c.MachineLateMaxMs == nil || LateOn(name, c) <= Late(c) {
		return ""
	}
	k, n := StallReach(name, c)
	what := "requests"
	if rule(name) == results.LateGap {
		what = "token gaps"
	}
	return fmt.Sprintf(" and stood still for %.0f ms once (machine_late_max_ms), which can hold up %.0f of its %.0f %s at a time", *c.MachineLateMaxMs, k, n, what)
}
