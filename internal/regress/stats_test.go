package regress

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestTQuantile checks Student's t quantiles against the printed tables.
func TestTQuantile(t *testing.T) {
	for _, c := range []struct{ p, df, want float64 }{
		{0.975, 1, 12.7062},
		{0.975, 10, 2.2281},
		{0.95, 5, 2.0150},
		{0.99, 24, 2.4922},
		{0.995, 30, 2.7500},
		{0.5, 7, 0},
		{0.025, 10, -2.2281},
	} {
		if got := TQuantile(c.p, c.df); !near(got, c.want, 1e-4) {
			t.Errorf("TQuantile(%v, %v) = %.5f, want %.4f", c.p, c.df, got, c.want)
		}
	}
	if !math.IsNaN(TQuantile(0.9, 0)) {
		t.Error("TQuantile with 0 degrees of freedom is not NaN")
	}
}

// TestPredictionLimit is Bencher's documented t_test example: 25 values
// of mean 100 and sd 10, upper boundary 0.977, give a limit of 121.46.
func TestPredictionLimit(t *testing.T) {
	if got := PredictionLimit(100, 10, 25, 0.977); !near(got, 121.46, 0.01) {
		t.Errorf("PredictionLimit = %.3f, want 121.46", got)
	}
}

// TestMannWhitney checks the U test against values worked by hand.
func TestMannWhitney(t *testing.T) {
	for _, c := range []struct {
		name  string
		a, b  []float64
		u, p  float64
		exact bool
	}{
		// No overlap: U = 0; μ = 12.5, σ² = 25·11/12;
		// z = (0 − 12.5 + 0.5)/σ = −2.5067; p = 2Φ(z).
		{"separated", []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 0, 0.0121858, false},
		// Ties: ranks 1, 3, 3, 6 for a (2s share 2..4, 3s share 5..7), R = 13,
		// U = 13 − 10 = 3; σ² = 16/12·(9 − (24+24)/56) = 10.857;
		// z = (|3 − 8| − 0.5)/σ = 1.3657; p = 0.17203.
		{"ties", []float64{1, 2, 2, 3}, []float64{2, 3, 3, 4}, 3, 0.1720337, false},
		// Identical samples: U = n1·n2/2, p = 1.
		{"identical", []float64{1, 2, 3}, []float64{1, 2, 3}, 4.5, 1, true},
		// All tied: no spread to rank, p = 1.
		{"all tied", []float64{5, 5}, []float64{5, 5, 5}, 3, 1, true},
	} {
		u, p := MannWhitney(c.a, c.b)
		if u != c.u || !near(p, c.p, 1e-6) {
			t.Errorf("%s: U, p = %v, %.7f; want %v, %.7f", c.name, u, p, c.u, c.p)
		}
		// The test is symmetric in its p-value.
		if _, p2 := MannWhitney(c.b, c.a); !near(p, p2, 1e-12) {
			t.Errorf("%s: p(a, b) = %v but p(b, a) = %v", c.name, p, p2)
		}
	}
}

// bhExample is the textbook example of Benjamini and Hochberg (1995,
// §3.2): 15 p-values of which, at q = 0.05, Benjamini–Hochberg rejects
// the first four and Holm (like Bonferroni) the first three.
var bhExample = []float64{0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240, 0.4262, 0.5719, 0.6528, 0.7590, 1.000}

func rejected(adj []float64, alpha float64) int {
	n := 0
	for _, p := range adj {
		if p <= alpha {
			n++
		}
	}
	return n
}

func TestCorrections(t *testing.T) {
	bh := BHAdjust(bhExample)
	holm := HolmAdjust(bhExample)
	if n := rejected(bh, 0.05); n != 4 {
		t.Errorf("Benjamini–Hochberg rejects %d of the textbook 15, want 4 (adjusted %v)", n, bh)
	}
	if n := rejected(holm, 0.05); n != 3 {
		t.Errorf("Holm rejects %d of the textbook 15, want 3 (adjusted %v)", n, holm)
	}
	// Adjusted values, worked by hand: Holm's i-th is max_{j≤i} (m−j+1)·p(j);
	// BH's is min_{j≥i} m·p(j)/j.
	for _, c := range []struct {
		name      string
		got, want []float64
	}{
		{"holm", holm[:5], []float64{0.0015, 0.0056, 0.0247, 0.114, 0.2211}},
		{"bh", bh[:9], []float64{0.0015, 0.003, 0.0095, 0.035625, 0.0603, 0.063857, 0.063857, 0.0645, 0.0765}},
	} {
		for i := range c.want {
			if !near(c.got[i], c.want[i], 1e-5) {
				t.Errorf("%s adjusted p(%d) = %.6f, want %.6f", c.name, i+1, c.got[i], c.want[i])
			}
		}
	}
	// Order does not matter, NaN is no test and counts for nothing.
	shuffled := []float64{bhExample[3], math.NaN(), bhExample[0], bhExample[2], bhExample[1]}
	adj := BHAdjust(shuffled)
	// m = 4: 0.0001·4 = 0.0004, 0.0004·2 = 0.0008, 0.0019·4/3, 0.0095.
	want := []float64{0.0095, math.NaN(), 0.0004, 0.0019 * 4 / 3, 0.0008}
	for i := range want {
		if math.IsNaN(want[i]) != math.IsNaN(adj[i]) || !math.IsNaN(want[i]) && !near(adj[i], want[i], 1e-12) {
			t.Errorf("BH of shuffled p(%d) = %v, want %v", i, adj[i], want[i])
		}
	}
	if got := Adjust(NoCorrection, shuffled); got[0] != shuffled[0] {
		t.Errorf("no correction changed p: %v", got)
	}
	for _, s := range []string{"bh", "holm", "none", ""} {
		if _, ok := ParseCorrection(s); !ok {
			t.Errorf("ParseCorrection(%q) refused", s)
		}
	}
	if _, ok := ParseCorrection("bonferroni-ish"); ok {
		t.Error("ParseCorrection accepted an unknown name")
	}
}

func TestGeoMean(t *testing.T) {
	if g := GeoMean([]float64{1, 4, 16}); !near(g, 4, 1e-12) {
		t.Errorf("GeoMean(1, 4, 16) = %v, want 4", g)
	}
	if g := GeoMean([]float64{1.1, 1 / 1.1}); !near(g, 1, 1e-12) {
		t.Errorf("GeoMean of a change and its inverse = %v, want 1", g)
	}
	if g := GeoMean([]float64{0, -1}); !math.IsNaN(g) {
		t.Errorf("GeoMean of no positive value = %v, want NaN", g)
	}
}
