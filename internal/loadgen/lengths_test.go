package loadgen

import (
	"math"
	"strings"
	"testing"
)

// TestLengthsDraw: each distribution's draws, over many requests, have
// the mean Expected says (the exact mean of the bounded, rounded
// distribution), stay within its bounds, and are the same for the same
// seed, pass and index; its label names it.
func TestLengthsDraw(t *testing.T) {
	const n = 200_000
	for _, tc := range []struct {
		l     Lengths
		label string
		mean  float64 // the distribution's own mean, where Expected is it
	}{
		{Lengths{Dist: DistUniform, Min: 64, Max: 256}, "uniform(64..256)", 160},
		{Lengths{Dist: DistNormal, Mean: 128, StdDev: 32}, "normal(128,32)", 128},
		{Lengths{Dist: DistLognormal, Mean: 128, StdDev: 64}, "lognormal(128,64)", 128},
		// Bounds that cut into a tail move the mean: Expected follows.
		{Lengths{Dist: DistLognormal, Mean: 128, StdDev: 64, Min: 100, Max: 200}, "lognormal(128,64,100..200)", 0},
		{Lengths{Dist: DistNormal, Mean: 10, StdDev: 10}, "normal(10,10)", 0},
		{Lengths{Dist: DistEmpirical, Values: []int{64, 128, 1024}, Weights: []float64{3, 1, 0.5}}, "empirical(64=3,128=1,1024=0.5)", (64*3 + 128 + 512) / 4.5},
		{Lengths{Dist: DistEmpirical, Values: []int{7, 9}}, "empirical(7,9)", 8},
		{Lengths{Dist: DistNormal, Mean: 50, StdDev: 0}, "normal(50,0)", 50},
	} {
		t.Run(tc.label, func(t *testing.T) {
			if err := tc.l.Check(); err != nil {
				t.Fatal(err)
			}
			if got := tc.l.Label(); got != tc.label {
				t.Errorf("label %q, want %q", got, tc.label)
			}
			exp := tc.l.Expected()
			if tc.mean > 0 && math.Abs(exp-tc.mean) > 0.01 {
				t.Errorf("Expected %.3f, want the distribution's mean %.3f", exp, tc.mean)
			}
			sum, sq := 0.0, 0.0
			lo, hi := tc.l.Lower(), tc.l.Upper()
			for i := range n {
				d := tc.l.Draw(42, 1, i)
				if d < lo || d > hi || d < 1 {
					t.Fatalf("draw %d: %d outside [%d, %d]", i, d, lo, hi)
				}
				sum += float64(d)
				sq += float64(d) * float64(d)
			}
			mean := sum / n
			se := math.Sqrt((sq/n-mean*mean)/n) + 1e-9
			if math.Abs(mean-exp) > 5*se {
				t.Errorf("mean of %d draws %.3f, Expected %.3f (%.1f standard errors off)", n, mean, exp, (mean-exp)/se)
			}
			// The same seed, pass and index draw the same; another seed
			// draws another sequence.
			same, other := 0, 0
			for i := range 100 {
				a := tc.l.Draw(42, 1, i)
				if a == tc.l.Draw(42, 1, i) {
					same++
				}
				if a != tc.l.Draw(43, 1, i) {
					other++
				}
			}
			if same != 100 || other == 0 && hi > lo {
				t.Errorf("of 100 draws, %d repeated under the same seed, %d differed under another", same, other)
			}
		})
	}
}

// TestLengthsCheck: what cannot be drawn from is refused with what to do.
func TestLengthsCheck(t *testing.T) {
	for _, tc := range []struct {
		l    Lengths
		want string
	}{
		{Lengths{Dist: "zipf"}, `dist "zipf": one of uniform, normal, lognormal, empirical`},
		{Lengths{Dist: DistUniform, Max: 10}, "a uniform distribution needs min and max"},
		{Lengths{Dist: DistNormal, StdDev: 2}, "a normal distribution needs a mean above 0"},
		{Lengths{Dist: DistLognormal, Mean: 5, StdDev: -1}, "stddev must be 0 or more"},
		{Lengths{Dist: DistNormal, Mean: 1000, StdDev: 10, Max: 100}, "min and max keep"},
		{Lengths{Dist: DistEmpirical}, "an empirical distribution needs values"},
		{Lengths{Dist: DistEmpirical, Values: []int{0, 4}}, "value 0: lengths are at least 1 token"},
		{Lengths{Dist: DistEmpirical, Values: []int{4}, Weights: []float64{0}}, "the weights sum to 0"},
		{Lengths{Dist: DistUniform, Min: 10, Max: 5}, "min 10 is above max 5"},
	} {
		err := tc.l.Check()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.l, err, tc.want)
		}
	}
}
