package regress

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
)

// side is one side's request-level samples of one family (ttft, itl,
// ...) for one cell: the values of every run pooled and sorted, each
// with the request it came from, and each run's requests in completion
// order, which the block bootstrap resamples.
type side struct {
	vals   []float64 // sorted
	owner  []int32   // the request (index into the side's requests) of each value
	runs   []runSpan // each run's requests: [start, end), with its block length
	nReq   int       // requests of every run
	nVals  int
	perReq []int32 // values each request gave
}

type runSpan struct {
	start, end int
	block      int
}

// completionOrder returns a cell's ok requests in the order they
// completed (sent_at + e2el), the order in which neighbours shared the
// server's batch.
func completionOrder(reqs []results.Request) []*results.Request {
	var out []*results.Request
	for i := range reqs {
		if reqs[i].Status == results.StatusOK {
			out = append(out, &reqs[i])
		}
	}
	done := func(q *results.Request) time.Time {
		if q.E2ELMs == nil {
			return q.SentAt
		}
		return q.SentAt.Add(time.Duration(*q.E2ELMs * float64(time.Millisecond)))
	}
	slices.SortStableFunc(out, func(a, b *results.Request) int { return done(a).Compare(done(b)) })
	return out
}

// BlockLength is the block of the moving-block bootstrap for a cell of n
// requests: max(3k, ∛n) requests, where k is the number of requests the
// server held at once (the concurrency of a closed loop; for an open
// loop, by Little's law, rate × mean e2el, capped by max_inflight), and
// at most n/3 so that every resample mixes at least three blocks.
//
// Why: requests in a batch are not independent. A request's latency
// depends on the others decoding beside it: in send order, about k before
// and k after it; and a batch's requests finish in an order that differs
// from their send order by up to k places, so in completion order the
// dependence reaches about 3k requests. Blocks that long keep each
// neighbourhood whole, and the bootstrap sees the real, larger spread of
// a quantile instead of the spread of independent draws (measured in
// TestBootstrapFalseAlarms: blocks of one request call identical runs
// different several times as often as the nominal rate; blocks of 2k
// still half again as often; 3k holds it). ∛n is the classic rate for
// block length (Hall, Horowitz and Jing, 1995) where batches are small.
// The interval uses Student's t with one degree of freedom fewer than the
// blocks a side holds, since that many pieces of evidence are mixed.
func BlockLength(c *results.Cell, n int, meanE2ELMs float64) int {
	k := float64(c.Concurrency)
	if c.Rate > 0 {
		k = c.Rate * meanE2ELMs / 1000
		if c.MaxInflight > 0 {
			k = math.Min(k, float64(c.MaxInflight))
		}
	}
	l := int(math.Ceil(math.Max(3*k, math.Cbrt(float64(n)))))
	if l > n/3 {
		l = n / 3
	}
	return max(l, 1)
}

// sideCell is one run's cell row of a side, with its requests.
type sideCell struct {
	run  *Run
	cell *results.Cell
	reqs []results.Request
}

// buildSide pools one family's request samples of a side's cells.
func buildSide(cells []sideCell, family string) side {
	var s side
	type val struct {
		x     float64
		owner int32
	}
	var all []val
	var buf []float64
	for _, sc := range cells {
		order := completionOrder(sc.reqs)
		var e2el float64
		var ne int
		for _, q := range order {
			if q.E2ELMs != nil {
				e2el += *q.E2ELMs
				ne++
			}
		}
		if ne > 0 {
			e2el /= float64(ne)
		}
		span := runSpan{start: s.nReq, end: s.nReq + len(order), block: BlockLength(sc.cell, len(order), e2el)}
		for i, q := range order {
			buf = measure.AppendFamily(buf[:0], q, family)
			for _, x := range buf {
				if !math.IsNaN(x) && !math.IsInf(x, 0) {
					all = append(all, val{x, int32(s.nReq + i)})
				}
			}
		}
		s.nReq += len(order)
		s.runs = append(s.runs, span)
	}
	slices.SortFunc(all, func(a, b val) int { return cmp.Compare(a.x, b.x) })
	s.vals = make([]float64, len(all))
	s.owner = make([]int32, len(all))
	for i, v := range all {
		s.vals[i], s.owner[i] = v.x, v.owner
	}
	s.nVals = len(all)
	s.perReq = make([]int32, s.nReq)
	for _, v := range all {
		s.perReq[v.owner]++
	}
	return s
}

// blocks is the number of whole blocks the side's runs hold: about the
// number of independent pieces of evidence the bootstrap mixes.
func (s *side) blocks() int {
	n := 0
	for _, r := range s.runs {
		n += (r.end - r.start) / max(r.block, 1)
	}
	return n
}

// resample draws each run's requests anew by the circular block
// bootstrap (Politis and Romano, 1992): blocks of the run's block length
// from uniform starts, wrapping at the end, until the run's request count
// is reached. counts[j] is how often request j was drawn.
func (s *side) resample(rng *rand.Rand, counts []int32) {
	clear(counts)
	for _, r := range s.runs {
		n := r.end - r.start
		if n == 0 {
			continue
		}
		for drawn := 0; drawn < n; {
			start := rng.IntN(n)
			for t := 0; t < r.block && drawn < n; t++ {
				counts[r.start+(start+t)%n]++
				drawn++
			}
		}
	}
}

// stats computes, over the side's values weighted by their requests'
// counts (nil: every request once), the statistic of each quantile in qs
// (0 = the mean; else linear interpolation between ranks of the expanded
// sample, as stats.Percentile). qs must be sorted ascending, means first.
func (s *side) stats(counts []int32, qs []float64, out []float64) {
	weight := func(i int) float64 {
		if counts == nil {
			return 1
		}
		return float64(counts[s.owner[i]])
	}
	total := float64(s.nVals)
	if counts != nil {
		total = 0
		for j, c := range counts {
			total += float64(c) * float64(s.perReq[j])
		}
	}
	if total == 0 {
		for j := range out {
			out[j] = math.NaN()
		}
		return
	}
	// Positions wanted in the expanded sample, two per quantile: those in
	// the lower half are found walking up from the smallest value, the
	// others walking down from the largest (a p99 reads 1% of the values).
	type want struct {
		pos  float64
		slot int
		hi   bool
	}
	var up, down []want
	lo := make([]float64, len(qs))
	hi := make([]float64, len(qs))
	frac := make([]float64, len(qs))
	for j, q := range qs {
		if q == 0 {
			var sum float64
			for i, x := range s.vals {
				sum += weight(i) * x
			}
			out[j] = sum / total
			continue
		}
		r := q * (total - 1)
		f := math.Floor(r)
		frac[j] = r - f
		for _, w := range []want{{f, j, false}, {math.Min(f+1, total-1), j, true}} {
			if w.pos < total/2 {
				up = append(up, w)
			} else {
				down = append(down, w)
			}
		}
	}
	set := func(w want, x float64) {
		if w.hi {
			hi[w.slot] = x
		} else {
			lo[w.slot] = x
		}
	}
	slices.SortStableFunc(up, func(a, b want) int { return cmp.Compare(a.pos, b.pos) })
	cum, k := 0.0, 0
	for i := 0; i < len(s.vals) && k < len(up); i++ {
		cum += weight(i) // value i holds positions [cum − w, cum)
		for k < len(up) && up[k].pos < cum {
			set(up[k], s.vals[i])
			k++
		}
	}
	slices.SortStableFunc(down, func(a, b want) int { return cmp.Compare(b.pos, a.pos) })
	cum, k = 0, 0
	for i := len(s.vals) - 1; i >= 0 && k < len(down); i-- {
		cum += weight(i) // value i holds positions [total − cum, total − cum + w)
		for k < len(down) && down[k].pos >= total-cum {
			set(down[k], s.vals[i])
			k++
		}
	}
	for j, q := range qs {
		if q != 0 {
			out[j] = lo[j] + frac[j]*(hi[j]-lo[j])
		}
	}
}

// bootResult is the bootstrap of one statistic's ratio new/old.
type bootResult struct {
	old, new  float64 // point estimates
	low, high float64 // interval of the ratio: exp(ln r ± t·se)
	p         float64 // two-sided, of ln ratio = 0 (Student t on the bootstrap se)
	se        float64 // bootstrap standard error of ln ratio
}

// maxBootWork bounds a bootstrap's work (values walked over all
// resamples): a side of a million ITL gaps gets fewer resamples rather
// than minutes. The interval rests on the bootstrap's standard error, which
// a few hundred resamples estimate to a few percent.
const maxBootWork = 2e8

// minResamples is the fewest resamples a bootstrap draws, however large.
const minResamples = 200

// bootstrapRatios resamples both sides b times (fewer for very large
// sides, see maxBootWork) and returns, for each quantile in qs, the
// ratio's interval at two-sided level alpha.
func bootstrapRatios(old, nw *side, qs []float64, b int, alpha float64, rng *rand.Rand) []bootResult {
	if work := float64(old.nVals + nw.nVals + old.nReq + nw.nReq); work*float64(b) > maxBootWork {
		b = max(minResamples, int(maxBootWork/work))
	}
	res := make([]bootResult, len(qs))
	po, pn := make([]float64, len(qs)), make([]float64, len(qs))
	old.stats(nil, qs, po)
	nw.stats(nil, qs, pn)
	lnr := make([][]float64, len(qs))
	co, cn := make([]int32, old.nReq), make([]int32, nw.nReq)
	so, sn := make([]float64, len(qs)), make([]float64, len(qs))
	for range b {
		old.resample(rng, co)
		nw.resample(rng, cn)
		old.stats(co, qs, so)
		nw.stats(cn, qs, sn)
		for j := range qs {
			if so[j] > 0 && sn[j] > 0 {
				lnr[j] = append(lnr[j], math.Log(sn[j]/so[j]))
			}
		}
	}
	df := float64(min(old.blocks(), nw.blocks()) - 1)
	df = max(df, 1)
	for j := range qs {
		r := bootResult{old: po[j], new: pn[j], low: math.NaN(), high: math.NaN(), p: math.NaN(), se: math.NaN()}
		if len(lnr[j]) >= b/2 && po[j] > 0 && pn[j] > 0 {
			xs := lnr[j]
			_, r.se = meanSD(xs)
			est := math.Log(pn[j] / po[j])
			t := TQuantile(1-alpha/2, df)
			r.low, r.high = math.Exp(est-t*r.se), math.Exp(est+t*r.se)
			switch {
			case r.se > 0:
				r.p = 2 * tSurvival(math.Abs(est)/r.se, df)
			case est == 0:
				r.p = 1
			default:
				r.p = 0
			}
		}
		res[j] = r
	}
	return res
}
