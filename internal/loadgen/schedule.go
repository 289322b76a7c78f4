package loadgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Arrival processes for open-loop load.
const (
	ArrivalConstant = "constant"
	ArrivalPoisson  = "poisson"
	ArrivalGamma    = "gamma"
)

// Ramp kinds.
const (
	RampLinear      = "linear"
	RampExponential = "exponential"
)

// Schedule is an open-loop arrival process: the gap before each request is
// drawn from Gamma(k = Burstiness, θ = 1/(λ·Burstiness)), whose mean is
// 1/λ. Burstiness 1 is Poisson, below 1 burstier, above 1 smoother,
// and constant is the limit b → ∞ (every gap exactly 1/λ).
//
// Offsets are the running sum of the gaps as drawn. They are never rescaled
// to make the total come out at n/λ (vLLM does that, which changes the
// process); a finite sample's rate is what the process gave.
type Schedule struct {
	// Rate is λ in requests per second (the rate after any ramp).
	Rate float64
	// Arrival is ArrivalConstant, ArrivalPoisson or ArrivalGamma.
	Arrival string
	// Burstiness is the gamma shape k (only for ArrivalGamma).
	Burstiness float64
	// Ramp, when its Duration is positive, raises the rate from RampFrom to
	// Rate over Duration, linearly or exponentially, then holds it.
	Ramp Ramp
	// Seed makes the draws reproducible.
	Seed uint64
	// Phase delays every offset (the first request is sent at Phase): a
	// shard of a constant schedule interleaves its sends with the other
	// shards' instead of sending at the same instants (Split).
	Phase time.Duration
	// Trace, when set, is a trace replay's send offsets in order (non-
	// decreasing): request i is due at Trace[i], and there are no more
	// requests than offsets. Rate, Arrival, Burstiness and Ramp are then
	// unused (trace.go).
	Trace []time.Duration
}

// Split is shard i's part of the schedule when n processes share it
// (0 <= i < n): rate λ/n (a ramp's start rate too) and its own seed, so
// the shards draw independent streams. Independent Poisson streams of
// λ/n sum to a Poisson stream of λ, exactly. Constant arrivals are
// phased: shard i starts i/λ after shard 0, so the n streams of gap n/λ
// interleave into one of gap 1/λ (exact while no ramp is set). A gamma
// stream is phased likewise, but a sum of independent gamma renewal
// streams is not a gamma renewal stream: the mean rate λ holds, the
// burstiness of the sum drifts toward Poisson's as n grows
// (docs/METRICS.md, Shards).
func (s Schedule) Split(i, n int) Schedule {
	if n <= 1 {
		return s
	}
	if s.Trace != nil {
		return s.splitTrace(i, n)
	}
	out := s
	out.Rate = s.Rate / float64(n)
	out.Ramp.From = s.Ramp.From / float64(n)
	out.Seed = s.Seed + uint64(i)
	if s.Arrival == ArrivalConstant || s.Arrival == ArrivalGamma {
		out.Phase = s.Phase + time.Duration(math.Round(float64(i)/s.Rate*float64(time.Second)))
	}
	return out
}

// SplitCount is shard i's share of a count c split over n shards:
// ⌊c/n⌋, plus one of the remainder for the first c mod n shards, so the
// shares sum to c.
func SplitCount(c, i, n int) int {
	if n <= 1 {
		return c
	}
	share := c / n
	if i < c%n {
		share++
	}
	return share
}

// Ramp is an optional warm ramp of the arrival rate.
type Ramp struct {
	Kind     string // RampLinear or RampExponential
	From     float64
	Duration time.Duration
}

// Validate reports a schedule that cannot run.
func (s Schedule) Validate() error {
	if s.Trace != nil {
		return s.validateTrace()
	}
	if !(s.Rate > 0) || math.IsInf(s.Rate, 0) {
		return fmt.Errorf("rate %v: want a positive number of requests per second", s.Rate)
	}
	switch s.Arrival {
	case ArrivalConstant, ArrivalPoisson, "":
	case ArrivalGamma:
		if !(s.Burstiness > 0) || math.IsInf(s.Burstiness, 0) {
			return fmt.Errorf("gamma arrivals need burstiness > 0, got %v", s.Burstiness)
		}
	default:
		return fmt.Errorf("arrival %q: want constant, poisson or gamma", s.Arrival)
	}
	if s.Ramp.Duration > 0 {
		switch s.Ramp.Kind {
		case RampLinear, "":
		case RampExponential:
		default:
			return fmt.Errorf("ramp %q: want linear or exponential", s.Ramp.Kind)
		}
		if !(s.Ramp.From > 0) {
			return fmt.Errorf("ramp from %v: want a positive starting rate", s.Ramp.From)
		}
	}
	return nil
}

// rateAt is λ(t) under the ramp.
func (s Schedule) rateAt(t time.Duration) float64 {
	if s.Ramp.Duration <= 0 || t >= s.Ramp.Duration {
		return s.Rate
	}
	f := float64(t) / float64(s.Ramp.Duration)
	if s.Ramp.Kind == RampExponential {
		return s.Ramp.From * math.Pow(s.Rate/s.Ramp.From, f)
	}
	return s.Ramp.From + (s.Rate-s.Ramp.From)*f
}

// Generator yields the schedule's offsets from the start, one at a time.
type Generator struct {
	s   Schedule
	rng *rand.Rand
	t   time.Duration
	// ts is the offset in seconds, summed in float64 and rounded to t:
	// summing gaps truncated to whole nanoseconds drifts early (3,000
	// constant gaps a second each lose a third of a nanosecond), so a
	// duration-bound pass would send one request too many.
	ts float64
	n  int
}

// NewGenerator starts the schedule at offset 0.
func (s Schedule) NewGenerator() *Generator {
	return &Generator{s: s, rng: rand.New(rand.NewPCG(s.Seed, 0x5eed_a771a1))}
}

// Next returns the offset of the next request. The first request is sent
// at offset 0; each later one after one drawn gap at the rate in force.
func (g *Generator) Next() time.Duration {
	if g.s.Trace != nil {
		return g.nextTrace()
	}
	if g.n > 0 {
		lambda := g.s.rateAt(g.t)
		var gap float64 // seconds
		switch g.s.Arrival {
		case ArrivalConstant:
			gap = 1 / lambda
		case ArrivalGamma:
			k := g.s.Burstiness
			gap = gammaSample(g.rng, k) / (lambda * k)
		default:
			gap = g.rng.ExpFloat64() / lambda
		}
		g.ts += gap
		g.t = time.Duration(math.Round(g.ts * float64(time.Second)))
	}
	g.n++
	// The ramp follows the shard's own time (g.t); only the send is
	// phased.
	return g.t + g.s.Phase
}

// Offsets returns the first n offsets, or (n <= 0) every offset before d.
func (s Schedule) Offsets(n int, d time.Duration) []time.Duration {
	g := s.NewGenerator()
	var out []time.Duration
	for {
		o := g.Next()
		if n > 0 && len(out) >= n || n <= 0 && o >= d {
			return out
		}
		if n > 0 && d > 0 && o >= d {
			return out
		}
		out = append(out, o)
	}
}

// gammaSample draws from Gamma(k, 1) (Marsaglia and Tsang, 2000; for k < 1
// the boost Gamma(k) = Gamma(k+1)·U^(1/k)).
func gammaSample(rng *rand.Rand, k float64) float64 {
	if k < 1 {
		u := rng.Float64()
		for u == 0 {
			u = rng.Float64()
		}
		return gammaSample(rng, k+1) * math.Pow(u, 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x {
			return d * v
		}
		if u > 0 && math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
