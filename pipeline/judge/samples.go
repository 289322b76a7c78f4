package judge

import (
	"fmt"
	"math"
	"strings"

	"github.com/expr-lang/expr"

	"github.com/benchrun/benchrun/internal/results"
)

// A check on a percentile is only as sure as the percentile: a p99 of
// eight requests is their largest. Each bounded percentile a row-level
// check reads has its 95 % bounds in the row (results.BoundsOf); when the
// check would come out the other way somewhere within them, it is
// inconclusive, "needs about N requests", not passed or failed
// (docs/PLANS.md, "Inconclusive verdicts").

// boundDim is one bounded percentile a check reads, with its bounds and
// sample (Hi +Inf where the sample is too small to bound the upper side;
// Lo the smallest positive number where it cannot bound the lower: every
// bounded percentile is of times, which are not negative, and a latency
// is above 0, so `e2el_p50_ms > 0` over llama-bench's three repetitions
// is decided, not inconclusive).
type boundDim struct {
	name          string
	col           results.Column
	base          bool // a column of the baseline's cell
	value, lo, hi float64
	n, completed  int64 // samples behind it, and the cell's completed requests
	unboundedHi   bool
	unboundedLo   bool
}

// boundDims are the bounded percentiles the check reads, in the row and
// in the baseline's cell.
func (a *Assertion) boundDims(c results.Cell, base *results.Cell) []boundDim {
	var dims []boundDim
	add := func(row *results.Cell, names []string, isBase bool) {
		for _, n := range names {
			col, ok := results.LookupExpr(n)
			if !ok {
				continue
			}
			b, ok := results.BoundIn(row, col)
			if !ok || b.Value == nil || b.N <= 0 {
				continue // not bounded, not measured, or a row that says nothing of its sample (older than the bounds, an exec row)
			}
			q := col.Quantile * 100
			if b.Lo == nil && b.Hi == nil && b.N >= int64(min(results.SamplesToBoundSide(q, results.BoundConf, false), results.SamplesToBoundSide(q, results.BoundConf, true))) {
				continue // a sample that size bounds a side: this row's bounds were never computed
			}
			d := boundDim{name: n, col: col, base: isBase, value: *b.Value, lo: math.SmallestNonzeroFloat64, hi: math.Inf(1), n: b.N, completed: row.Completed}
			if isBase {
				d.name = "baseline." + n
			}
			if b.Lo != nil {
				d.lo = *b.Lo
			} else {
				d.unboundedLo = true
			}
			if b.Hi != nil {
				d.hi = *b.Hi
			} else {
				d.unboundedHi = true
			}
			dims = append(dims, d)
		}
	}
	add(&c, a.names, false)
	if base != nil {
		add(base, a.baselineNames, true)
	}
	return dims[:min(len(dims), maxExplainDims)]
}

// holdsAt runs the check with each dim moved to value + s·(its bound −
// value), towards its lower bound where the mask's bit is clear and its
// upper where set (s = 1: the bounds themselves).
func (a *Assertion) holdsAt(c results.Cell, reqs requestColumns, base *results.Cell, dims []boundDim, mask int, s float64) (bool, bool) {
	cc := c
	var cb *results.Cell
	if base != nil {
		copied := *base
		cb = &copied
	}
	for k, d := range dims {
		end := d.lo
		if mask&(1<<k) != 0 {
			end = d.hi
		}
		x := end
		if s < 1 && !math.IsInf(end, 0) {
			x = d.value + s*(end-d.value)
		}
		row := &cc
		if d.base {
			row = cb
		}
		d.col.SetNumber(row, x)
	}
	out, err := expr.Run(a.prog, rowEnv{Cell: cc, Requests: reqs, Baseline: cb})
	if err != nil {
		return false, false
	}
	ok, _ := out.(bool)
	return ok, true
}

// agrees says whether the check comes out as observed at every corner of
// the bounds scaled by s.
func (a *Assertion) agrees(c results.Cell, reqs requestColumns, base *results.Cell, dims []boundDim, observed bool, s float64) bool {
	for mask := 0; mask < 1<<len(dims); mask++ {
		if got, ok := a.holdsAt(c, reqs, base, dims, mask, s); ok && got != observed {
			return false
		}
	}
	return true
}

// unresolved says whether the bounds of the percentiles the check reads
// straddle it, how many requests a cell would need about to decide it,
// and why in numbers. The rule (docs/PLANS.md, "Inconclusive verdicts"):
// an order statistic's interval narrows as 1/√n, so if the check comes
// out the same at every corner of the bounds shrunk to a fraction s of
// their distance from the percentile, about n/s² requests decide it; a
// side the sample cannot bound yet needs at least the count that bounds
// it (368 samples for a p99's upper side), whatever the distance.
func (a *Assertion) unresolved(c results.Cell, rc requestColumns, base *results.Cell, observed bool) (string, int64, bool) {
	if a.Level != LevelRow {
		return "", 0, false
	}
	dims := a.boundDims(c, base)
	if len(dims) == 0 {
		return "", 0, false
	}
	if a.agrees(c, rc, base, dims, observed, 1) {
		return "", 0, false
	}
	// The bounded sides scale; an unbounded one stays at the value here
	// and asks for the samples that would bound it instead.
	finite := make([]boundDim, len(dims))
	need, atThreshold, atLeast := int64(0), false, false
	var parts []string
	for i, d := range dims {
		finite[i] = d
		if d.unboundedLo {
			finite[i].lo = d.value
		}
		if d.unboundedHi {
			finite[i].hi = d.value
		}
		perRequest := 1.0
		if d.completed > 0 && d.n > 0 {
			perRequest = float64(d.n) / float64(d.completed)
		}
		for _, upper := range []bool{false, true} {
			if upper && d.unboundedHi || !upper && d.unboundedLo {
				samples := results.SamplesToBoundSide(d.col.Quantile*100, results.BoundConf, upper)
				need, atLeast = max(need, int64(math.Ceil(float64(samples)/perRequest))), true
			}
		}
		parts = append(parts, fmt.Sprintf("%s %.4g has 95 %% bounds [%s, %s] from %d samples", d.name, d.value, boundText(d.lo, d.unboundedLo), boundText(d.hi, d.unboundedHi), d.n))
	}
	if !a.agrees(c, rc, base, finite, observed, 1) {
		lo, hi := 0.0, 1.0 // agrees at lo, not at hi
		for range 30 {
			mid := (lo + hi) / 2
			if a.agrees(c, rc, base, finite, observed, mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
		if lo < 1e-3 {
			atThreshold = true
		} else {
			for _, d := range dims {
				need = max(need, int64(math.Ceil(float64(d.completed)/(lo*lo))))
			}
		}
	}
	if atThreshold {
		return fmt.Sprintf("too few samples: %s, and the check sits at its threshold: more requests narrow the bounds but may never decide it", strings.Join(parts, "; ")), 0, true
	}
	about := "about"
	if atLeast {
		about = "at least"
	}
	return fmt.Sprintf("too few samples: needs %s %d requests: %s, within which the check would come out the other way", about, need, strings.Join(parts, "; ")), need, true
}

func boundText(x float64, unbounded bool) string {
	if unbounded {
		return "unbounded"
	}
	return fmt.Sprintf("%.4g", x)
}

// SampleWarning says why a row-level check cannot be decided on cells of
// `requests` requests of osl output tokens: a bounded percentile it reads
// needs more samples than such a cell gives (stats.SamplesToBound: 368
// for a p99 at 95 %); "" when every one can be bounded.
func (a *Assertion) SampleWarning(requests, osl int) string {
	if a.Level != LevelRow || requests <= 0 {
		return ""
	}
	for _, n := range a.names {
		col, ok := results.LookupExpr(n)
		if !ok || !col.Bounds {
			continue
		}
		per := results.SamplesPerRequest(col, osl)
		need := max(results.SamplesToBoundSide(col.Quantile*100, results.BoundConf, false), results.SamplesToBoundSide(col.Quantile*100, results.BoundConf, true))
		if have := requests * per; have < need {
			more := "no number of requests"
			if per > 0 {
				more = fmt.Sprintf("%d requests or more", (need+per-1)/per)
			}
			return fmt.Sprintf("assertion %q reads %s, whose 95 %% bounds need %d samples; a cell of %d requests (osl %d) gives at most %d, so its verdict will be inconclusive (too few samples) whatever the server does: send %s (docs/PLANS.md, \"Inconclusive verdicts\")",
				a.Expr, n, need, requests, osl, have, more)
		}
	}
	return ""
}
