package regress

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func series(seed uint64, n int, base, sigma float64, shiftAt int, factor float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 3))
	xs := make([]float64, n)
	for i := range xs {
		b := base
		if shiftAt >= 0 && i >= shiftAt {
			b *= factor
		}
		xs[i] = noisy(rng, b, sigma)
	}
	return xs
}

// TestChangePointInjected: a 10% shift after run 30 of a 60-run series
// is found within ±2 runs, with the means on either side and a p-value
// under 0.001; seeds vary the noise.
func TestChangePointInjected(t *testing.T) {
	found := 0
	const seeds = 50
	for seed := range uint64(seeds) {
		xs := series(seed, 60, 100, 0.02, 30, 1.10)
		cps := ChangePoints(xs, ChangePointOptions{})
		ok := false
		for _, c := range cps {
			if c.Index >= 28 && c.Index <= 32 && c.P <= 0.001 && math.Abs(c.MeanBefore-100) < 3 && math.Abs(c.MeanAfter-110) < 3 && math.Abs(c.Change()-0.10) < 0.04 {
				ok = true
			}
		}
		if !ok {
			t.Errorf("seed %d: change points %+v, want one at 30±2 from ~100 to ~110", seed, cps)
		}
		if len(cps) > 1 {
			t.Errorf("seed %d: %d change points where one shift was injected: %+v", seed, len(cps), cps)
		}
		if ok {
			found++
		}
	}
	t.Logf("a 10%% shift at run 30 of 60 (σ = 2%%) found within ±2 runs in %d of %d series", found, seeds)
	// Exactly at 30 on a clean step.
	step := series(0, 60, 100, 0, 30, 1.2)
	step[0] += 0.001 // a spread to test
	if cps := ChangePoints(step, ChangePointOptions{}); len(cps) != 1 || cps[0].Index != 30 {
		t.Errorf("clean step: %+v", cps)
	}
}

// TestChangePointsMany: two shifts in a long series (longer than one
// window) are both found; a shift below the magnitude threshold is not
// reported.
func TestChangePointsMany(t *testing.T) {
	a := series(1, 40, 100, 0.01, -1, 1)
	b := series(2, 40, 120, 0.01, -1, 1)
	c := series(3, 40, 90, 0.01, -1, 1)
	xs := append(append(a, b...), c...)
	cps := ChangePoints(xs, ChangePointOptions{})
	if len(cps) != 2 || math.Abs(float64(cps[0].Index-40)) > 2 || math.Abs(float64(cps[1].Index-80)) > 2 {
		t.Errorf("two shifts at 40 and 80: %+v", cps)
	}
	small := series(4, 60, 100, 0.005, 30, 1.03) // 3%, very clear, under the 5% magnitude
	if cps := ChangePoints(small, ChangePointOptions{}); len(cps) != 0 {
		t.Errorf("a 3%% shift under the 5%% magnitude was reported: %+v", cps)
	}
	if cps := ChangePoints(small, ChangePointOptions{MinMagnitude: 0.01}); len(cps) != 1 {
		t.Errorf("with a 1%% magnitude, the 3%% shift: %+v", cps)
	}
	if cps := ChangePoints(nil, ChangePointOptions{}); cps != nil {
		t.Errorf("empty series: %+v", cps)
	}
}

// TestChangePointFalseAlarms measures how often a series without any
// change (60 runs of σ = 3% noise) gets a change point.
func TestChangePointFalseAlarms(t *testing.T) {
	const n = 300
	flagged := 0
	for seed := range uint64(n) {
		if len(ChangePoints(series(1000+seed, 60, 100, 0.03, -1, 1), ChangePointOptions{})) > 0 {
			flagged++
		}
	}
	rate := float64(flagged) / n
	t.Logf("stationary 60-run series: %d of %d had a change point (%.1f%%)", flagged, n, 100*rate)
	if rate > 0.02 {
		t.Errorf("false change points in %.3f of stationary series, over 0.02", rate)
	}
}

// TestSeriesOf: series per cell and metric over runs, excluded runs
// counted, the change point located on the series' points.
func TestSeriesOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	var runs []*Run
	for i := range 40 {
		f := 1.0
		if i >= 20 {
			f = 1.25
		}
		r := mkRun(i, mkCell("a", map[string]float64{"ttft_p50_ms": noisy(rng, 40*f, 0.02), "output_tok_s": noisy(rng, 400, 0.02)}))
		if i == 5 {
			r.Status = "failed"
		}
		runs = append(runs, r)
	}
	ms, _ := SelectMetrics([]string{"ttft_p50_ms", "output_tok_s"})
	ss := SeriesOf(runs, ms, Options{}, ChangePointOptions{})
	if len(ss) != 2 {
		t.Fatalf("%d series, want 2", len(ss))
	}
	tt := ss[0]
	if tt.Metric.Name != "ttft_p50_ms" || len(tt.Points) != 39 || tt.Excluded["run failed"] != 1 {
		t.Errorf("ttft series: %s, %d points, excluded %v", tt.Metric.Name, len(tt.Points), tt.Excluded)
	}
	if len(tt.ChangePoints) != 1 || tt.Points[tt.ChangePoints[0].Index].RunID != "run020" {
		t.Errorf("ttft change points %+v", tt.ChangePoints)
	}
	if !tt.Points[0].At.Equal(t0) || tt.Points[1].At.Sub(tt.Points[0].At) != 24*time.Hour {
		t.Errorf("points' times %v, %v", tt.Points[0].At, tt.Points[1].At)
	}
	if len(ss[1].ChangePoints) != 0 {
		t.Errorf("steady throughput has change points %+v", ss[1].ChangePoints)
	}
}
