package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSortedQuantileBoundSmallSamples(t *testing.T) {
	eight := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	b := SortedQuantileBound(eight, 99, 0.95)
	if !math.IsNaN(b.Hi) || b.HiRank != 9 {
		t.Fatalf("p99 of 8 samples got an upper bound %v (rank %d); 8 samples cannot bound it", b.Hi, b.HiRank)
	}
	if b.Bounded() {
		t.Fatal("Bounded() true for a p99 of 8")
	}
	m := SortedQuantileBound(eight, 50, 0.95)
	// Binomial(8, .5): P(B<=0)=.0039, P(B<=1)=.035 -> l=1; symmetric u=8.
	if m.LoRank != 1 || m.HiRank != 8 || m.Lo != 1 || m.Hi != 8 {
		t.Fatalf("median of 8: ranks %d..%d values %v..%v, want 1..8", m.LoRank, m.HiRank, m.Lo, m.Hi)
	}
	if m.Coverage < 0.95 {
		t.Fatalf("coverage %v < 0.95", m.Coverage)
	}
}

func TestSamplesToBound(t *testing.T) {
	for _, c := range []struct {
		p, conf float64
		want    int
	}{{99, 0.95, 368}, {50, 0.95, 6}, {90, 0.95, 36}} {
		got := SamplesToBound(c.p, c.conf)
		if got != c.want {
			t.Errorf("SamplesToBound(%v, %v) = %d, want %d", c.p, c.conf, got, c.want)
		}
		// At that size the bound exists; one fewer it does not.
		xs := make([]float64, got)
		for i := range xs {
			xs[i] = float64(i)
		}
		if !SortedQuantileBound(xs, c.p, c.conf).Bounded() {
			t.Errorf("p%v at %d samples: not bounded", c.p, got)
		}
		if SortedQuantileBound(xs[:got-1], c.p, c.conf).Bounded() {
			t.Errorf("p%v at %d samples: bounded, SamplesToBound too high", c.p, got-1)
		}
	}
}

// TestQuantileBoundCoverage draws samples from a known distribution
// (exponential, mean 1) and checks the bound holds the true percentile
// in at least its confidence of the trials (less a binomial margin).
func TestQuantileBoundCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const trials = 2000
	for _, p := range []float64{50, 90, 99} {
		truth := -math.Log(1 - p/100)
		for _, n := range []int{400, 1000} {
			hit := 0
			xs := make([]float64, n)
			for range trials {
				for i := range xs {
					xs[i] = rng.ExpFloat64()
				}
				slices.Sort(xs)
				b := SortedQuantileBound(xs, p, 0.95)
				if b.Lo <= truth && truth <= b.Hi {
					hit++
				}
			}
			rate := float64(hit) / trials
			// 3 standard errors of a 95% rate over 2000 trials is 1.5 points.
			if rate < 0.935 {
				t.Errorf("p%v n=%d: coverage %.3f < 0.935", p, n, rate)
			}
			t.Logf("p%v n=%d coverage %.3f", p, n, rate)
		}
	}
}

func BenchmarkSortedQuantileBound(b *testing.B) {
	xs := make([]float64, 10_000_000)
	for i := range xs {
		xs[i] = float64(i)
	}
	for b.Loop() {
		SortedQuantileBound(xs, 99, 0.95)
	}
}
