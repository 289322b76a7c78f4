package regress

import (
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// withMaxSideValues lowers the thinning threshold for one test.
func withMaxSideValues(t *testing.T, n int) {
	was := maxSideValues
	maxSideValues = n
	t.Cleanup(func() { maxSideValues = was })
}

// TestThinnedSideIsExact: a side thinned for the bootstrap keeps the
// whole side's counts, point estimates and tail bounds, exactly those of
// the side held whole, and resamples about 1/k of its requests in whole
// blocks.
func TestThinnedSideIsExact(t *testing.T) {
	r := reqRun(3, "a", 4000, 8, 40, 8, 0.3, 450)
	qs := []float64{0, 0.5, 0.9, 0.99}
	whole := sideOf(r, "itl", qs...)
	withMaxSideValues(t, 16_000) // 64,000 gaps: every 4th block
	thin := sideOf(r, "itl", qs...)
	if whole.exact != nil || thin.exact == nil {
		t.Fatalf("whole side thinned (%v) or thin side not (%v)", whole.exact != nil, thin.exact == nil)
	}
	if thin.nReq != whole.nReq || thin.nVals != whole.nVals || thin.nVals != 64_000 {
		t.Errorf("thinned side counts %d requests, %d values; whole %d, %d", thin.nReq, thin.nVals, whole.nReq, whole.nVals)
	}
	if kept := len(thin.perReq); kept < 950 || kept > 1050 || math.Abs(thin.scale-float64(kept)/4000) > 1e-12 {
		t.Errorf("thinned side keeps %d requests (scale %v), want about 1,000 of 4,000", kept, thin.scale)
	}
	if len(thin.vals) != 16*len(thin.perReq) {
		t.Errorf("thinned side holds %d values of %d requests: a request's gaps split", len(thin.vals), len(thin.perReq))
	}
	pw, pt := make([]float64, len(qs)), make([]float64, len(qs))
	whole.point(qs, pw)
	thin.point(qs, pt)
	for j, q := range qs {
		// The mean is a sum in another order: equal to rounding.
		if pw[j] != pt[j] && !(q == 0 && near(pw[j], pt[j], 1e-12)) {
			t.Errorf("q%v: thinned side's point %v, whole side's %v", q, pt[j], pw[j])
		}
	}
	for _, q := range qs[1:] {
		w, th := whole.tails[q], thin.tails[q]
		if w.Lo != th.Lo || w.Hi != th.Hi || w.N != th.N {
			t.Errorf("q%v: thinned bounds [%v, %v] of %d, whole [%v, %v] of %d", q, th.Lo, th.Hi, th.N, w.Lo, w.Hi, w.N)
		}
	}
	// Whole blocks: each kept request's block-mates are kept with it.
	block := thin.runs[0].block
	if thin.runs[0].end != len(thin.perReq) || block != 24 {
		t.Fatalf("span %+v of %d kept requests, want one run of blocks of 24", thin.runs[0], len(thin.perReq))
	}
}

// TestThinnedBootstrapSpread: over 150 pairs of identical runs of 2,400
// correlated requests, the bootstrap of sides thinned to a quarter (whole
// blocks, spread scaled by √¼) gives about the whole sides' standard
// error, and its intervals exclude 1 about as rarely (nominal 5 %).
func TestThinnedBootstrapSpread(t *testing.T) {
	const pairs, n, k, resamples = 150, 2400, 8, 400
	var ratio float64
	var wholeHits, thinHits int
	for i := range pairs {
		a := reqRun(uint64(2*i), "a", n, k, 40, 8, 0.3, 450)
		b := reqRun(uint64(2*i+1), "b", n, k, 40, 8, 0.3, 450)
		sa, sb := sideOf(a, "ttft", 0.5), sideOf(b, "ttft", 0.5)
		maxSideValues = n / 4
		ta, tb := sideOf(a, "ttft", 0.5), sideOf(b, "ttft", 0.5)
		maxSideValues = 1 << 20
		if ta.exact == nil || math.Abs(ta.scale-0.25) > 0.02 {
			t.Fatalf("pair %d: side kept %d of %d requests, want a quarter", i, len(ta.perReq), ta.nReq)
		}
		w := bootstrapRatios(&sa, &sb, []float64{0.5}, resamples, 0.05, rand.New(rand.NewPCG(uint64(i), 5)))[0]
		th := bootstrapRatios(&ta, &tb, []float64{0.5}, resamples, 0.05, rand.New(rand.NewPCG(uint64(i), 6)))[0]
		if w.old != th.old || w.new != th.new {
			t.Fatalf("pair %d: thinned point estimates %v, %v; whole %v, %v", i, th.old, th.new, w.old, w.new)
		}
		ratio += th.se / w.se
		if w.low > 1 || w.high < 1 {
			wholeHits++
		}
		if th.low > 1 || th.high < 1 {
			thinHits++
		}
	}
	ratio /= pairs
	t.Logf("%d identical pairs of %d requests: the thinned bootstrap's standard error %.3f× the whole one's; intervals exclude 1 in %.1f %% (thinned) and %.1f %% (whole)",
		pairs, n, ratio, 100*float64(thinHits)/pairs, 100*float64(wholeHits)/pairs)
	if ratio < 0.85 || ratio > 1.2 {
		t.Errorf("the thinned bootstrap's standard error is %.3f× the whole side's, want within 0.85–1.2", ratio)
	}
	if rate := float64(thinHits) / pairs; rate > 0.09 {
		t.Errorf("thinned intervals exclude 1 for %.1f %% of identical pairs, want at most 9 %%", 100*rate)
	}
}

// generated are n ok streamed requests of a closed loop of k, each of 63
// lognormal gaps, made as they are read and never held (as a run
// directory's rows are read, rundir.StoredRequests): a side's reading
// without the rows' own memory. peak, when set, is called every 2,000 rows.
type generated struct {
	n, k int
	seed uint64
	peak func()
}

func (g generated) Len() int   { return g.n }
func (g generated) Err() error { return nil }
func (g generated) All() iter.Seq[*results.Request] {
	return func(yield func(*results.Request) bool) {
		rng := rand.New(rand.NewPCG(g.seed, 7))
		q := results.Request{CellID: "sweep/128:64/c8", Status: results.StatusOK, OutputTokens: 64, Chunks: 64, ChunkGapsMs: make([]float64, 63)}
		at := t0
		for i := range g.n {
			tt := 40 * math.Exp(0.2*rng.NormFloat64())
			e2 := tt
			for j := range q.ChunkGapsMs {
				q.ChunkGapsMs[j] = 8 * math.Exp(0.1*rng.NormFloat64())
				e2 += q.ChunkGapsMs[j]
			}
			q.Seq, q.SentAt, q.TTFTMs, q.E2ELMs = int64(i), at, results.Some(tt), results.Some(e2)
			if !yield(&q) {
				return
			}
			at = at.Add(time.Duration(e2 * float64(time.Millisecond) / float64(g.k)))
			if g.peak != nil && i%2000 == 0 {
				g.peak()
			}
		}
	}
}

// TestCompareHeldIsFlat: comparing two runs of 30,000 and of 90,000
// streamed requests of 64 tokens (1.9 and 5.7 million gaps a side) holds
// about the same: the rows are read, the bootstrap's sides are thinned to
// at most maxSideValues values, and only 4 bytes a request (its place in
// completion order) plus a reading's 16 grow with the rows. Held whole,
// the larger pair's sides alone were 46 MB more.
func TestCompareHeldIsFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("two comparisons of 60,000 and 180,000 requests")
	}
	m, _ := SelectMetrics([]string{"ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms"})
	var grew []int64
	for _, n := range []int{30_000, 90_000} {
		live := func() uint64 {
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			return ms.HeapAlloc
		}
		base := live()
		var most uint64
		peak := func() { most = max(most, live()) }
		run := func(id string, seed uint64) *Run {
			c := mkCell("sweep/128:64/c8", nil)
			c.Concurrency, c.Requests, c.Completed = 8, int64(n), int64(n)
			r := mkRun(0, c)
			r.ID = id
			r.Requests = map[string]results.Requests{c.CellID: generated{n: n, k: 8, seed: seed, peak: peak}}
			return r
		}
		rep := CompareRuns([]*Run{run("old", 1)}, []*Run{run("new", 2)}, Options{Metrics: m, Resamples: 200})
		for _, v := range rep.Verdicts {
			if v.Method != MethodBootstrap || v.N != n || math.IsNaN(v.Low) {
				t.Fatalf("%s of %d requests: method %q, %d requests, interval [%v, %v]; want a bootstrap of every request", v.Metric, n, v.Method, v.N, v.Low, v.High)
			}
			// The gaps' sides (63 a request) are thinned, the TTFTs' not;
			// the verdict says so.
			said := strings.Contains(v.Reason, fmt.Sprintf("of the old side's %d requests", n))
			if said != strings.HasPrefix(v.Metric, "itl") {
				t.Errorf("%s of %d requests: reason %q", v.Metric, n, v.Reason)
			}
		}
		grew = append(grew, int64(most)-int64(base))
	}
	t.Logf("the live heap grew %.1f MB comparing runs of 30,000 requests, %.1f MB of 90,000", float64(grew[0])/1e6, float64(grew[1])/1e6)
	if grew[1] > grew[0]+4<<20 {
		t.Errorf("the live heap grew %d bytes comparing 30,000 requests a side and %d comparing 90,000: it grows with the rows", grew[0], grew[1])
	}
}
