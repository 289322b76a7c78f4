package measure

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/benchrun/benchrun/internal/results"
)

// TestFillCellBounds: eight requests bound their TTFT median by their
// smallest and largest (Binomial(8, ½): P(B ≤ 0) = 0.4 % ≤ 2.5 % <
// P(B ≤ 1) = 3.5 %), their p99 from below by the 7th smallest (P(B ≤ 6)
// = 0.27 % for Binomial(8, 0.99)) and not at all from above (0.99^8 =
// 92 % of the time the true p99 lies above all eight), which the row's
// null reason says; the sample sizes stand beside them.
func TestFillCellBounds(t *testing.T) {
	var reqs []results.Request
	for i, ttft := range []float64{5, 3, 8, 1, 7, 2, 6, 4} {
		reqs = append(reqs, okReq(time.Duration(i)*time.Second, 0, ttft, ttft+10, []float64{1, 2, 3}, nil))
	}
	var row results.Cell
	FillCell(&row, results.AsRequests(reqs), CellWindow{Span: 10 * time.Second}, SLO{})
	for name, c := range map[string]struct {
		got  *float64
		want float64
	}{
		"ttft_p50 lo": {row.TTFTP50MsLo, 1}, "ttft_p50 hi": {row.TTFTP50MsHi, 8},
		"ttft_p99 lo": {row.TTFTP99MsLo, 7},
		"e2el_p50 lo": {row.E2ELP50MsLo, 11}, "e2el_p50 hi": {row.E2ELP50MsHi, 18},
		// 24 gaps, eight each of 1, 2 and 3 ms: Binomial(24, ½) puts the
		// median between the 7th and the 18th.
		"itl_p50 lo": {row.ITLP50MsLo, 1}, "itl_p50 hi": {row.ITLP50MsHi, 3},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", name, deref(c.got), c.want)
		}
	}
	if row.TTFTP99MsHi != nil || row.TPOTP99MsHi != nil {
		t.Errorf("eight requests bound a p99 from above: ttft %v, tpot %v", deref(row.TTFTP99MsHi), deref(row.TPOTP99MsHi))
	}
	if why := results.WhyNull(row, row0Name(t, results.ColTTFTP99Ms, true)); !strings.Contains(why, "8 samples cannot bound ttft_p99_ms from above") || !strings.Contains(why, "368") {
		t.Errorf("the unbounded side's reason = %q", why)
	}
	if row.ITLSamples == nil || *row.ITLSamples != 24 || row.TPOTSamples == nil || *row.TPOTSamples != 8 {
		t.Errorf("sample sizes itl %v, tpot %v; want 24 and 8", row.ITLSamples, row.TPOTSamples)
	}
	n, ok := results.SampleSize(&row, results.MustLookup(results.ColTTFTP99Ms))
	if !ok || n != 8 {
		t.Errorf("SampleSize(ttft_p99_ms) = %d, %v; want 8 (completed)", n, ok)
	}

	// Nothing completed: every bound is NULL with its percentile.
	var empty results.Cell
	FillCell(&empty, results.AsRequests([]results.Request{failedReq(0, 0, "refused")}), CellWindow{Span: time.Second}, SLO{})
	if empty.TTFTP50MsLo != nil || empty.ITLP99MsLo != nil || *empty.ITLSamples != 0 {
		t.Errorf("bounds of an empty sample: %v %v, itl_samples %v", deref(empty.TTFTP50MsLo), deref(empty.ITLP99MsLo), *empty.ITLSamples)
	}
}

// row0Name is the name of a percentile's lower or upper bound column.
func row0Name(t *testing.T, percentile string, upper bool) string {
	t.Helper()
	lo, hi, ok := results.BoundsOf(percentile)
	if !ok {
		t.Fatalf("%s has no bounds", percentile)
	}
	if upper {
		return hi.Name
	}
	return lo.Name
}

// TestBoundsCoverKnownDistribution: over 300 cells of 370 requests whose
// TTFTs are lognormal draws (median 20 ms, spread 0.5: the p-th
// percentile is 20 × exp(0.5 × z_p)), the bounds FillCell stores hold the
// true p50, p90 and p99 in at least 93 % of cells each (the rule
// promises 95 %, a little more where the ranks are discrete). The same
// check against the simulator over HTTP is stages/sweep's
// TestPercentileBoundsCover.
func TestBoundsCoverKnownDistribution(t *testing.T) {
	const cells, n = 300, 370
	rng := rand.New(rand.NewPCG(3, 4))
	truth := map[string]float64{}
	for _, p := range []float64{0.5, 0.9, 0.99} {
		truth[fmt.Sprint(p)] = 20 * math.Exp(0.5*distuv.UnitNormal.Quantile(p))
	}
	covered := map[string]int{}
	for range cells {
		reqs := make([]results.Request, n)
		for i := range reqs {
			x := 20 * math.Exp(0.5*rng.NormFloat64())
			reqs[i] = okReq(time.Duration(i)*time.Millisecond, 0, x, x+10, []float64{5}, nil)
		}
		var row results.Cell
		FillCell(&row, results.AsRequests(reqs), CellWindow{Span: time.Second}, SLO{})
		for q, b := range map[string][2]*float64{"0.5": {row.TTFTP50MsLo, row.TTFTP50MsHi}, "0.9": {row.TTFTP90MsLo, row.TTFTP90MsHi}, "0.99": {row.TTFTP99MsLo, row.TTFTP99MsHi}} {
			if b[0] == nil || b[1] == nil {
				t.Fatalf("p%s of %d requests unbounded", q, n)
			}
			if *b[0] <= truth[q] && truth[q] <= *b[1] {
				covered[q]++
			}
		}
	}
	for q, c := range covered {
		t.Logf("p%s: the true %.3f ms inside the bounds in %d of %d cells", q, truth[q], c, cells)
		if float64(c) < 0.93*cells {
			t.Errorf("p%s: bounds held the true value in %d of %d cells, want at least 93 %%", q, c, cells)
		}
	}
}
