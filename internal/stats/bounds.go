package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// QuantileBound is a distribution-free confidence interval for one
// percentile of the population a sample came from, made of two of the
// sample's own order statistics (the binomial rule: the number of samples
// below the true p-quantile is Binomial(n, p), whatever the distribution).
// A side the sample is too small to bound is NaN with its rank 0 (lower)
// or N+1 (upper): eight requests cannot bound a p99 from above, since the
// true p99 lies above all eight with probability 0.99^8 = 92 %.
type QuantileBound struct {
	N      int
	P      float64 // the percentile, 0..100
	Conf   float64 // the two-sided confidence, 0..1
	Lo, Hi float64
	// LoRank and HiRank are the 1-based order statistics used.
	LoRank, HiRank int
	// Coverage is the exact probability, under the binomial rule, that
	// [Lo, Hi] holds the true percentile (at least Conf when both sides
	// are bounded; ties in the sample only widen it).
	Coverage float64
}

// Bounded reports whether both sides are finite.
func (b QuantileBound) Bounded() bool { return !math.IsNaN(b.Lo) && !math.IsNaN(b.Hi) }

// SortedQuantileBound is the two-sided conf bound of the p-th percentile
// (0..100) of the population behind sorted (ascending). Each side keeps at
// most (1−conf)/2 of the probability outside it, so the pair covers at
// least conf. It allocates nothing and evaluates the binomial CDF
// O(log n) times, so it is cheap for ten million samples.
func SortedQuantileBound(sorted []float64, p, conf float64) QuantileBound {
	n := len(sorted)
	b := quantileBoundRanks(n, p, conf)
	if b.LoRank >= 1 {
		b.Lo = sorted[b.LoRank-1]
	}
	if b.HiRank <= n {
		b.Hi = sorted[b.HiRank-1]
	}
	return b
}

// quantileBoundRanks is SortedQuantileBound's ranks and coverage for n
// values, without the values (Lo and Hi NaN).
func quantileBoundRanks(n int, p, conf float64) QuantileBound {
	b := QuantileBound{N: n, P: p, Conf: conf, Lo: math.NaN(), Hi: math.NaN(), HiRank: n + 1}
	if n == 0 || p <= 0 || p >= 100 || conf <= 0 || conf >= 1 {
		return b
	}
	q := p / 100
	tail := (1 - conf) / 2
	bin := distuv.Binomial{N: float64(n), P: q}
	cdf := func(k int) float64 { // P(B <= k)
		if k < 0 {
			return 0
		}
		if k >= n {
			return 1
		}
		return bin.CDF(float64(k))
	}
	// Lower rank l: X_(l) <= ξ fails when fewer than l samples fall below ξ,
	// P(B <= l-1). Take the largest l with P(B <= l-1) <= tail.
	lo, hi := 0, n // search l in [0, n]; l = 0 means unbounded
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if cdf(mid-1) <= tail {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	b.LoRank = lo
	// Upper rank u: ξ <= X_(u) fails when at least u samples fall below ξ,
	// P(B >= u) = 1 - P(B <= u-1). Take the smallest u with that <= tail.
	ulo, uhi := 1, n+1 // u = n+1 means unbounded
	for ulo < uhi {
		mid := (ulo + uhi) / 2
		if 1-cdf(mid-1) <= tail {
			uhi = mid
		} else {
			ulo = mid + 1
		}
	}
	b.HiRank = ulo
	// P(l <= B <= u-1), with the missing sides open.
	b.Coverage = cdf(b.HiRank-1) - cdf(b.LoRank-1)
	return b
}

// SamplesToBound is the smallest sample size at which both sides of the
// conf bound of the p-th percentile exist: 6 for a p50, 36 for a p90 and
// 368 for a p99, all at 95 % two-sided (MLPerf LoadGen's 662 for a p99 is
// at 99 % confidence with a margin for the bound's width).
func SamplesToBound(p, conf float64) int {
	if p <= 0 || p >= 100 || conf <= 0 || conf >= 1 {
		return 0
	}
	tail := (1 - conf) / 2
	q := p / 100
	// The scarcer side governs: the upper for p >= 50 needs (q)^n <= tail,
	// the lower for p < 50 needs (1-q)^n <= tail.
	worst := math.Max(q, 1-q)
	return int(math.Ceil(math.Log(tail) / math.Log(worst)))
}
