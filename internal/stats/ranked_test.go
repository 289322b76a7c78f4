package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Rank gives exactly what sorting the whole sample gives (the summary's
// percentiles, min and max, other percentiles and the order-statistic
// bounds), held to a few values so that it must narrow, over samples of
// every shape: spread, a few distinct values repeated (a simulator's fixed
// gaps), one value, negative and positive, tiny and huge; and it reads the
// sample a bounded number of times.
func TestRankIsSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := map[string]func(i int) float64{
		"lognormal": func(int) float64 { return math.Exp(rng.NormFloat64()) },
		"few":       func(i int) float64 { return float64(i%3) + 1 },
		"one":       func(int) float64 { return 1.0 },
		"signed":    func(int) float64 { return rng.NormFloat64() * 1e6 },
		"wide":      func(int) float64 { return math.Exp(rng.NormFloat64() * 40) },
		"close":     func(int) float64 { return 1 + float64(rng.IntN(5))*math.SmallestNonzeroFloat64 },
		"jitter":    func(int) float64 { return 1 + rng.Float64()*0.05 },
	}
	for name, gen := range shapes {
		for _, n := range []int{1, 2, 7, 1000, 50000} {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = gen(i)
			}
			for _, held := range []int{MaxHeld, 64, 1} {
				reads := 0
				pass := func(yield func(float64)) {
					reads++
					for _, x := range xs {
						yield(x)
					}
				}
				ps := []float64{0, 1, 33.3, 50, 75, 99.99, 100}
				r := Rank(pass, func(n int) []int {
					out := append(SummaryRanks(n), PercentileRanks(n, ps...)...)
					out = append(out, BoundRanks(n, 99, 0.95)...)
					return append(out, BoundRanks(n, 50, 0.95)...)
				}, held)
				sorted := slices.Clone(xs)
				slices.Sort(sorted)
				want := SummarizeInPlace(slices.Clone(xs))
				if got := r.Summary(); got != want {
					t.Errorf("%s n=%d held=%d: summary %+v, want %+v", name, n, held, got, want)
				}
				for _, p := range ps {
					if got, want := r.Percentile(p), SortedPercentile(sorted, p); got != want {
						t.Errorf("%s n=%d held=%d: p%v %v, want %v", name, n, held, p, got, want)
					}
				}
				for _, p := range []float64{50, 99} {
					got, want := r.Bound(p, 0.95), SortedQuantileBound(sorted, p, 0.95)
					if !sameBound(got, want) {
						t.Errorf("%s n=%d held=%d: bound of p%v %+v, want %+v", name, n, held, p, got, want)
					}
				}
				if reads > 6 {
					t.Errorf("%s n=%d held=%d: read %d times", name, n, held, reads)
				}
			}
		}
	}
}

// Rank narrows from the bits every value shares, read off the first
// reading's lowest and highest: one value repeated is read once however
// many there are, and 1 ms gaps with 50 µs of jitter (a simulator's
// fixed timings as a client measures them), which share their top 20
// bits, are read three times, not four (the first 16 bits told nothing).
func TestRankStartsBelowSharedBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		name     string
		gen      func() float64
		maxReads int
	}{
		{"one", func() float64 { return 2.5 }, 1},
		{"jitter", func() float64 { return 1 + rng.Float64()*0.05 }, 3},
	} {
		xs := make([]float64, 200_000)
		for i := range xs {
			xs[i] = tc.gen()
		}
		reads := 0
		r := Rank(func(yield func(float64)) {
			reads++
			for _, x := range xs {
				yield(x)
			}
		}, func(n int) []int { return append(SummaryRanks(n), BoundRanks(n, 99, 0.95)...) }, 1000)
		if got, want := r.Summary(), SummarizeInPlace(slices.Clone(xs)); got != want {
			t.Errorf("%s: summary %+v, want %+v", tc.name, got, want)
		}
		if reads > tc.maxReads {
			t.Errorf("%s: read %d times, want at most %d", tc.name, reads, tc.maxReads)
		}
	}
}

// RankEach ranks many samples read together as sorting each gives,
// whatever the samples' sizes (empty, one value, thousands), shapes
// (spread, fixed, signed) and the budget held over all of them, and reads
// them a bounded number of times in all, however many there are (60
// slices of a soak were read 3 times each, one after the other).
func TestRankEachIsSortingEach(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const fams = 60
	samples := make([][]float64, fams)
	for f := range samples {
		n := []int{0, 1, 2, 500, 3000}[f%5]
		for i := range n {
			switch f % 3 {
			case 0:
				samples[f] = append(samples[f], math.Exp(rng.NormFloat64()))
			case 1:
				samples[f] = append(samples[f], float64(i%4)+1)
			default:
				samples[f] = append(samples[f], rng.NormFloat64()*1e3)
			}
		}
	}
	for _, held := range []int{MaxHeld, 5000, 64, 1} {
		reads := 0
		pass := func(yield func(int, float64)) {
			reads++
			// The samples interleaved, as a cell's slices' gaps come.
			for i := 0; ; i++ {
				any := false
				for f := range samples {
					if i < len(samples[f]) {
						yield(f, samples[f][i])
						any = true
					}
				}
				if !any {
					return
				}
			}
		}
		ps := []float64{50, 99, 100}
		got := RankEach(pass, fams, func(_, n int) []int { return PercentileRanks(n, ps...) }, held)
		for f, xs := range samples {
			sorted := slices.Clone(xs)
			slices.Sort(sorted)
			if got[f].N != len(xs) || got[f].Sum != ExactSum(xs) {
				t.Errorf("held=%d sample %d: n %d sum %v, want %d %v", held, f, got[f].N, got[f].Sum, len(xs), ExactSum(xs))
			}
			if len(xs) == 0 {
				continue
			}
			for _, p := range ps {
				if g, w := got[f].Percentile(p), SortedPercentile(sorted, p); g != w {
					t.Errorf("held=%d sample %d (n=%d): p%v %v, want %v", held, f, len(xs), p, g, w)
				}
			}
		}
		if reads > 8 {
			t.Errorf("held=%d: %d samples read %d times", held, fams, reads)
		}
		t.Logf("held=%d: %d samples read %d times", held, fams, reads)
	}
}

func sameBound(a, b QuantileBound) bool {
	eq := func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) }
	return a.N == b.N && a.LoRank == b.LoRank && a.HiRank == b.HiRank && eq(a.Lo, b.Lo) && eq(a.Hi, b.Hi) && a.Coverage == b.Coverage
}

// ExactSum is the correctly rounded sum whatever the order: a sum whose
// terms cancel, and one of many small terms, come out exact.
func TestExactSum(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{1e100, 1, -1e100}, 1},
		{[]float64{0.1, 0.2, 0.3}, 0.6},
		{nil, 0},
		{[]float64{1, 1e-16, 1e-16}, 1.0000000000000002},
	} {
		for range 5 {
			if got := ExactSum(tc.xs); got != tc.want {
				t.Errorf("ExactSum(%v) = %v, want %v", tc.xs, got, tc.want)
			}
			rand.Shuffle(len(tc.xs), func(i, j int) { tc.xs[i], tc.xs[j] = tc.xs[j], tc.xs[i] })
		}
	}
}

// BenchmarkRank prints the values held and readings of a long cell's
// gap family ranked by Rank against sorting it whole.
func BenchmarkRank(b *testing.B) {
	xs := make([]float64, 4<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range xs {
		xs[i] = math.Exp(rng.NormFloat64()*0.3) * 1.0
	}
	b.Run("rank", func(b *testing.B) {
		reads := 0
		for range b.N {
			reads = 0
			Rank(func(yield func(float64)) {
				reads++
				for _, x := range xs {
					yield(x)
				}
			}, SummaryRanks, MaxHeld)
		}
		b.ReportMetric(float64(reads), "reads")
	})
	b.Run("sort", func(b *testing.B) {
		for range b.N {
			SummarizeInPlace(slices.Clone(xs))
		}
	})
}

// Rank at every whole percentile (a report's distribution: 101 windows,
// found by binary search) gives what sorting gives, over spread and
// jittered samples narrowed past a small budget.
func TestRankEveryPercentile(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	levels := make([]float64, 101)
	for i := range levels {
		levels[i] = float64(i)
	}
	for name, gen := range map[string]func() float64{
		"lognormal": func() float64 { return math.Exp(rng.NormFloat64()) },
		"jitter":    func() float64 { return 1 + rng.Float64()*0.05 },
		"signed":    func() float64 { return rng.NormFloat64() * 1e3 },
	} {
		xs := make([]float64, 60_000)
		for i := range xs {
			xs[i] = gen()
		}
		r := Rank(func(yield func(float64)) {
			for _, x := range xs {
				yield(x)
			}
		}, func(n int) []int { return PercentileRanks(n, levels...) }, 500)
		sorted := slices.Clone(xs)
		slices.Sort(sorted)
		for _, p := range levels {
			if got, want := r.Percentile(p), SortedPercentile(sorted, p); got != want {
				t.Errorf("%s: p%v %v, want %v", name, p, got, want)
			}
		}
	}
}
