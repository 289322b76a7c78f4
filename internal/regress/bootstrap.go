package regress

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// side is one side's request-level samples of one family (ttft, itl,
// ...) for one cell: what the bootstrap resamples (the values of every
// run pooled and sorted, each with the request it came from, and each
// run's requests in completion order) and how many the whole side holds.
//
// A side of more than maxSideValues values (a soak's 57 million chunk
// gaps) is thinned for the bootstrap to whole blocks, every k-th of each
// run's, so that what it holds and the time a resample takes do not grow
// with a run's length; its point estimates and tail bounds stay the whole
// side's, exact (exact), and the bootstrap's spread is scaled to the
// whole side (scale).
type side struct {
	nReq  int // ok requests of every run, the whole side
	nVals int // the values they gave
	// exact is the whole side's ranks and sum when the bootstrap reads a
	// thinned side; nil when vals is the whole side.
	exact *stats.Ranked
	// scale is the kept requests over nReq: a statistic's variance over
	// the whole side is its variance over the kept ones times scale.
	scale float64
	// blocks is the number of whole blocks of the whole side's runs:
	// about the number of independent pieces of evidence it holds.
	blocks int

	vals   []float64 // sorted: the kept requests' values
	owner  []int32   // the kept request (index into perReq) of each value
	runs   []runSpan // each run's kept requests: [start, end), with its block length
	perReq []int32   // values each kept request gave
	kept   int       // len(perReq), kept past release
	err    error     // why the request rows could not be read
	// tails are the whole side's bounds of each quantile asked for, by
	// quantile (0..1).
	tails map[float64]stats.QuantileBound
}

// release lets go of what only the bootstrap reads.
func (s *side) release() { s.vals, s.owner, s.perReq = nil, nil, nil }

type runSpan struct {
	start, end int
	block      int
}

// maxSideValues is the most values a side's bootstrap resamples (12 MB
// held, 8 MB walked a resample): a side of more is thinned to whole
// blocks. A variable for the tests, which thin small sides.
var maxSideValues = 1 << 20

// point is the whole side's statistic of each quantile in qs (0 = the
// mean), as side.stats computes it unweighted.
func (s *side) point(qs []float64, out []float64) {
	if s.exact == nil {
		s.stats(nil, qs, out)
		return
	}
	for j, q := range qs {
		switch {
		case s.exact.N == 0:
			out[j] = math.NaN()
		case q == 0:
			out[j] = s.exact.Sum / float64(s.exact.N)
		default:
			out[j] = s.exact.Percentile(percentOf(q))
		}
	}
}

// bound is the whole side's distribution-free bound of the p-th
// percentile.
func (s *side) bound(p float64) stats.QuantileBound {
	if s.exact == nil {
		return stats.SortedQuantileBound(s.vals, p, results.BoundConf)
	}
	return s.exact.Bound(p, results.BoundConf)
}

// thinned says how many requests a thinned side's bootstrap resampled
// ("" when neither side was thinned): the interval's samples, beside the
// point estimates' (Verdict.N, NNew).
func thinned(old, new *side) string {
	var parts []string
	for _, x := range []struct {
		name string
		s    *side
	}{{"old", old}, {"new", new}} {
		if x.s.exact != nil {
			parts = append(parts, fmt.Sprintf("%d of the %s side's %d requests", x.s.kept, x.name, x.s.nReq))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("the interval's bootstrap resampled %s (whole blocks: a side of over %d values is thinned, and its spread scaled to all of them)", strings.Join(parts, " and "), maxSideValues)
}

// percentOf is quantile q (0..1) as the percentile (0..100) a row names:
// 0.99 → 99, not 99.00000000000001.
func percentOf(q float64) float64 { return math.Round(q*100*1e9) / 1e9 }

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

// sideCell is one run's cell row of a side, with its requests (read
// from the run directory when asked, never held) and what prepare read of
// them.
type sideCell struct {
	run  *Run
	cell *results.Cell
	reqs results.Requests
	*prepared
}

// prepared is one reading of a side cell's requests: each row's place in
// completion order (sent_at + e2el, the order in which neighbours shared
// the server's batch; −1 for a row not ok), the ok rows' count and mean
// e2el, and how many values each family gives.
type prepared struct {
	place    []int32
	nOK      int
	meanE2EL float64
	values   map[string]int
	err      error
}

// prepare reads sc's requests once for every family in families.
func (sc *sideCell) prepare(families []string) {
	if sc.prepared != nil {
		return
	}
	p := &prepared{values: map[string]int{}}
	sc.prepared = p
	if sc.reqs == nil {
		return
	}
	type done struct {
		at  int64
		row int32
	}
	var ds []done
	var e2el float64
	var ne, row int
	var buf []float64
	for q := range sc.reqs.All() {
		row++
		if q.Status != results.StatusOK {
			continue
		}
		at := q.SentAt.UnixNano()
		if q.E2ELMs != nil {
			at += int64(*q.E2ELMs * float64(time.Millisecond))
			e2el += *q.E2ELMs
			ne++
		}
		ds = append(ds, done{at, int32(row - 1)})
		for _, f := range families {
			buf = measure.AppendFamily(buf[:0], q, f)
			p.values[f] += finite(buf)
		}
	}
	if err := sc.reqs.Err(); err != nil {
		p.err = fmt.Errorf("reading the requests of %s of run %s: %w", sc.cell.CellID, sc.run.ID, err)
	}
	slices.SortStableFunc(ds, func(a, b done) int { return cmp.Compare(a.at, b.at) })
	p.place = make([]int32, row)
	for i := range p.place {
		p.place[i] = -1
	}
	for i, d := range ds {
		p.place[d.row] = int32(i)
	}
	p.nOK = len(ds)
	if ne > 0 {
		p.meanE2EL = e2el / float64(ne)
	}
}

// finite counts the values of xs that are neither NaN nor infinite.
func finite(xs []float64) int {
	n := 0
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			n++
		}
	}
	return n
}

// eachValue calls f with every finite value of family that sc's ok
// requests give, with the request's place in completion order.
func (sc *sideCell) eachValue(family string, f func(place int, x float64)) error {
	if sc.reqs == nil {
		return nil
	}
	var buf []float64
	row := 0
	for q := range sc.reqs.All() {
		row++
		if row > len(sc.place) {
			break // not read by prepare
		}
		at := sc.place[row-1]
		if at < 0 {
			continue
		}
		buf = measure.AppendFamily(buf[:0], q, family)
		for _, x := range buf {
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				f(int(at), x)
			}
		}
	}
	if err := sc.reqs.Err(); err != nil {
		return fmt.Errorf("reading the requests of %s of run %s: %w", sc.cell.CellID, sc.run.ID, err)
	}
	return nil
}

// buildSide pools one family's request samples of a side's cells (each
// prepared for it) for the quantiles qs (0 = the mean): every request,
// or, past maxSideValues, every k-th whole block of each run, with the
// whole side's exact point estimates and tail bounds beside them.
func buildSide(cells []sideCell, family string, qs []float64) side {
	s := side{scale: 1}
	for _, sc := range cells {
		s.nReq += sc.nOK
		s.nVals += sc.values[family]
		if s.err == nil {
			s.err = sc.err
		}
	}
	thin := max(1, (s.nVals+maxSideValues-1)/maxSideValues)
	type val struct {
		x     float64
		owner int32
	}
	var all []val
	kept := 0
	for _, sc := range cells {
		block := BlockLength(sc.cell, sc.nOK, sc.meanE2EL)
		whole := sc.nOK / block
		s.blocks += whole
		// Every k-th block, k at most a third of the run's blocks so that
		// a resample still mixes three.
		k := min(thin, max(1, whole/3))
		n := 0 // the run's kept requests
		for b := 0; b*block < sc.nOK; b += k {
			n += min(block, sc.nOK-b*block)
		}
		start := kept
		err := sc.eachValue(family, func(at int, x float64) {
			if b := at / block; b%k == 0 {
				all = append(all, val{x, int32(start + b/k*block + at%block)})
			}
		})
		if err != nil && s.err == nil {
			s.err = err
		}
		s.runs = append(s.runs, runSpan{start: start, end: start + n, block: block})
		kept += n
	}
	slices.SortFunc(all, func(a, b val) int { return cmp.Compare(a.x, b.x) })
	s.vals = make([]float64, len(all))
	s.owner = make([]int32, len(all))
	s.perReq = make([]int32, kept)
	s.kept = kept
	for i, v := range all {
		s.vals[i], s.owner[i] = v.x, v.owner
		s.perReq[v.owner]++
	}
	defer func() {
		s.tails = map[float64]stats.QuantileBound{}
		for _, q := range qs {
			if q > 0 && q < 1 {
				s.tails[q] = s.bound(percentOf(q))
			}
		}
	}()
	if kept == s.nReq {
		return s
	}
	// The whole side's ranks: its quantiles' and their bounds'.
	s.scale = float64(kept) / float64(s.nReq)
	r := stats.Rank(func(yield func(float64)) {
		for _, sc := range cells {
			if err := sc.eachValue(family, func(_ int, x float64) { yield(x) }); err != nil && s.err == nil {
				s.err = err
			}
		}
	}, func(n int) []int {
		var ranks []int
		for _, q := range qs {
			if q > 0 {
				p := percentOf(q)
				ranks = append(ranks, stats.PercentileRanks(n, p)...)
				ranks = append(ranks, stats.BoundRanks(n, p, results.BoundConf)...)
			}
		}
		return ranks
	}, stats.MaxHeld)
	s.exact = &r
	return s
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
	total := float64(len(s.vals))
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
	if work := float64(len(old.vals) + len(nw.vals) + len(old.perReq) + len(nw.perReq)); work*float64(b) > maxBootWork {
		b = max(minResamples, int(maxBootWork/work))
	}
	res := make([]bootResult, len(qs))
	po, pn := make([]float64, len(qs)), make([]float64, len(qs))
	old.point(qs, po)
	nw.point(qs, pn)
	lnr := make([][]float64, len(qs))
	co, cn := make([]int32, len(old.perReq)), make([]int32, len(nw.perReq))
	// A thinned side's statistic varies more than the whole side's by
	// 1/scale (a quantile's variance goes as 1/n): its log is scaled by
	// √scale, which scales its deviations so.
	ko, kn := math.Sqrt(old.scale), math.Sqrt(nw.scale)
	so, sn := make([]float64, len(qs)), make([]float64, len(qs))
	for range b {
		old.resample(rng, co)
		nw.resample(rng, cn)
		old.stats(co, qs, so)
		nw.stats(cn, qs, sn)
		for j := range qs {
			switch {
			case so[j] <= 0 || sn[j] <= 0:
			case ko == 1 && kn == 1:
				lnr[j] = append(lnr[j], math.Log(sn[j]/so[j]))
			default:
				lnr[j] = append(lnr[j], kn*math.Log(sn[j])-ko*math.Log(so[j]))
			}
		}
	}
	df := float64(min(old.blocks, nw.blocks) - 1)
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
