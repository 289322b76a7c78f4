package loadgen

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"
)

// The length distributions a cell's isl or osl may be drawn from.
const (
	DistUniform   = "uniform"
	DistNormal    = "normal"
	DistLognormal = "lognormal"
	DistEmpirical = "empirical"
)

// Lengths is a token length drawn per request from a distribution
// (production traffic is never one length): uniform over [Min, Max],
// normal or lognormal of the given Mean and StdDev (of the lengths
// themselves, not of their logarithm) kept within [Min, Max] by drawing
// again, or Values with their Weights. Every draw is an integer of at
// least 1. A draw depends only on its seed, pass and index, never on
// timing, so a run is reproducible (the gonum distributions over a PCG
// source seeded per request).
type Lengths struct {
	Dist string `json:"dist"`
	// Min and Max bound the draws (0: no bound given; every draw is at
	// least 1 whatever Min says).
	Min int `json:"min"`
	Max int `json:"max"`
	// Mean and StdDev of a normal or lognormal.
	Mean   float64 `json:"mean"`
	StdDev float64 `json:"stddev"`
	// Values and Weights of an empirical distribution (no weights: all
	// alike).
	Values  []int     `json:"values"`
	Weights []float64 `json:"weights"`
}

// maxRedraws is how often a draw outside [Min, Max] is drawn again before
// it is clamped: Check refuses bounds that keep under a thousandth of the
// distribution, so a clamp is rarer than one in 10^190.
const maxRedraws = 64

// Check says what is wrong with the distribution (nil: nothing): Draw
// needs a distribution that passed it.
func (l *Lengths) Check() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if l.Min < 0 || l.Max < 0 {
		bad("min and max are token counts: at least 0")
	}
	if l.Max > 0 && l.Min > l.Max {
		bad("min %d is above max %d", l.Min, l.Max)
	}
	switch l.Dist {
	case DistUniform:
		if l.Min < 1 || l.Max < 1 {
			bad("a uniform distribution needs min and max (at least 1)")
		}
	case DistNormal, DistLognormal:
		if l.Mean <= 0 || math.IsInf(l.Mean, 0) || math.IsNaN(l.Mean) {
			bad("a %s distribution needs a mean above 0", l.Dist)
		}
		if l.StdDev < 0 || math.IsInf(l.StdDev, 0) || math.IsNaN(l.StdDev) {
			bad("stddev must be 0 or more")
		}
		if len(errs) == 0 {
			if kept := l.keptMass(); kept < 1e-3 {
				bad("min and max keep %.2g of the %s(%g, %g) distribution: draws would almost never fall inside; widen them or move the mean", kept, l.Dist, l.Mean, l.StdDev)
			}
		}
	case DistEmpirical:
		if len(l.Values) == 0 {
			bad("an empirical distribution needs values")
		}
		for _, v := range l.Values {
			if v < 1 {
				bad("value %d: lengths are at least 1 token", v)
				break
			}
		}
		if len(l.Weights) > 0 && len(l.Weights) != len(l.Values) {
			bad("%d weights for %d values: give one weight per value, or none", len(l.Weights), len(l.Values))
		}
		sum := 0.0
		for _, w := range l.Weights {
			if w < 0 || math.IsInf(w, 0) || math.IsNaN(w) {
				bad("weight %g: weights are 0 or more", w)
				break
			}
			sum += w
		}
		if len(l.Weights) > 0 && sum <= 0 {
			bad("the weights sum to 0")
		}
	default:
		bad("dist %q: one of uniform, normal, lognormal, empirical", l.Dist)
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// continuous is the normal or lognormal itself, drawing from src.
func (l *Lengths) continuous(src rand.Source) interface {
	Rand() float64
	CDF(float64) float64
	Quantile(float64) float64
} {
	if l.Dist == DistNormal {
		return distuv.Normal{Mu: l.Mean, Sigma: l.StdDev, Src: src}
	}
	// The lognormal whose lengths have mean m and standard deviation s:
	// σ² = ln(1 + s²/m²), μ = ln m − σ²/2.
	s2 := math.Log1p(l.StdDev * l.StdDev / (l.Mean * l.Mean))
	return distuv.LogNormal{Mu: math.Log(l.Mean) - s2/2, Sigma: math.Sqrt(s2), Src: src}
}

// lo is the lower bound of the draws.
func (l *Lengths) lo() int { return max(l.Min, 1) }

// keptMass is the share of a normal or lognormal whose rounded draws
// fall in [lo, Max].
func (l *Lengths) keptMass() float64 {
	if l.StdDev == 0 {
		n := int(math.Round(l.Mean))
		if n >= l.lo() && (l.Max == 0 || n <= l.Max) {
			return 1
		}
		return 0
	}
	d := l.continuous(nil)
	upper := 1.0
	if l.Max > 0 {
		upper = d.CDF(float64(l.Max) + 0.5)
	}
	return upper - d.CDF(float64(l.lo())-0.5)
}

// Draw is the length of request i of pass pass under seed (the caller
// folds the cell, stream and shard into it).
func (l *Lengths) Draw(seed uint64, pass, i int) int {
	src := rand.NewPCG(seed, mix64(uint64(pass)<<40^uint64(i)))
	switch l.Dist {
	case DistUniform:
		return l.Min + rand.New(src).IntN(l.Max-l.Min+1)
	case DistEmpirical:
		if len(l.Weights) == 0 {
			return l.Values[rand.New(src).IntN(len(l.Values))]
		}
		return l.Values[int(distuv.NewCategorical(l.Weights, src).Rand())]
	}
	if l.StdDev == 0 {
		return l.clamp(int(math.Round(l.Mean)))
	}
	d := l.continuous(src)
	for range maxRedraws {
		n := math.Round(d.Rand())
		if n >= float64(l.lo()) && (l.Max == 0 || n <= float64(l.Max)) {
			return int(n)
		}
	}
	return l.clamp(int(math.Min(math.Round(d.Rand()), math.MaxInt32)))
}

func (l *Lengths) clamp(n int) int {
	n = max(n, l.lo())
	if l.Max > 0 {
		n = min(n, l.Max)
	}
	return n
}

// Upper is the longest length the distribution draws in practice: Max,
// the largest value, or (unbounded) the quantile a draw exceeds once in
// a billion; what a context or a timeout must allow for.
func (l *Lengths) Upper() int {
	switch l.Dist {
	case DistUniform:
		return l.Max
	case DistEmpirical:
		return maxOf(l.Values)
	}
	if l.Max > 0 {
		return l.Max
	}
	if l.StdDev == 0 {
		return l.clamp(int(math.Round(l.Mean)))
	}
	return max(int(math.Ceil(l.continuous(nil).Quantile(1-1e-9))), l.lo())
}

// Lower is the shortest length the distribution draws.
func (l *Lengths) Lower() int {
	switch l.Dist {
	case DistEmpirical:
		return minOf(l.Values)
	case DistUniform:
		return l.Min
	}
	if l.StdDev == 0 {
		return l.clamp(int(math.Round(l.Mean)))
	}
	return l.lo()
}

// Expected is the mean of the draws exactly: of a normal or lognormal,
// the mean of its rounded values within the bounds (what drawing again
// outside them gives), not the Mean asked for, which bounds that cut
// into one tail move.
func (l *Lengths) Expected() float64 {
	switch l.Dist {
	case DistUniform:
		return float64(l.Min+l.Max) / 2
	case DistEmpirical:
		sum, weight := 0.0, 0.0
		for k, v := range l.Values {
			w := 1.0
			if len(l.Weights) > 0 {
				w = l.Weights[k]
			}
			sum += w * float64(v)
			weight += w
		}
		return sum / weight
	}
	if l.StdDev == 0 {
		return float64(l.clamp(int(math.Round(l.Mean))))
	}
	d := l.continuous(nil)
	sum, mass := 0.0, 0.0
	below := d.CDF(float64(l.lo()) - 0.5)
	for n := l.lo(); n <= l.Upper(); n++ {
		cdf := d.CDF(float64(n) + 0.5)
		sum += float64(n) * (cdf - below)
		mass += cdf - below
		below = cdf
	}
	return sum / mass
}

// Label names the distribution in a cell's id and its isl_dist or
// osl_dist column: lognormal(128,32), normal(128,32,16..512),
// uniform(64..256), empirical(64=3,128=1).
func (l *Lengths) Label() string {
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	bounds := func() string {
		if l.Min == 0 && l.Max == 0 {
			return ""
		}
		b := ","
		if l.Min > 0 {
			b += strconv.Itoa(l.Min)
		}
		b += ".."
		if l.Max > 0 {
			b += strconv.Itoa(l.Max)
		}
		return b
	}
	switch l.Dist {
	case DistUniform:
		return fmt.Sprintf("uniform(%d..%d)", l.Min, l.Max)
	case DistEmpirical:
		parts := make([]string, len(l.Values))
		for k, v := range l.Values {
			parts[k] = strconv.Itoa(v)
			if k < len(l.Weights) {
				parts[k] += "=" + g(l.Weights[k])
			}
		}
		return "empirical(" + strings.Join(parts, ",") + ")"
	}
	return fmt.Sprintf("%s(%s,%s%s)", l.Dist, g(l.Mean), g(l.StdDev), bounds())
}

func maxOf(vs []int) int {
	m := 0
	for _, v := range vs {
		m = max(m, v)
	}
	return m
}

func minOf(vs []int) int {
	if len(vs) == 0 {
		return 0
	}
	m := vs[0]
	for _, v := range vs {
		m = min(m, v)
	}
	return m
}
