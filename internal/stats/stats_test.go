package stats

import (
	"math"
	"testing"
)

func TestPercentile(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		p    float64
		want float64
	}{
		{"single", []float64{7}, 99, 7},
		{"median odd", []float64{3, 1, 2}, 50, 2},
		{"median even interpolates", []float64{1, 2, 3, 4}, 50, 2.5},
		{"p0 is min", []float64{5, 1, 9}, 0, 1},
		{"p100 is max", []float64{5, 1, 9}, 100, 9},
		// numpy.percentile(range(1,101), 99) == 99.01
		{"p99 of 1..100", seq(1, 100), 99, 99.01},
		{"p90 of 1..10", seq(1, 10), 90, 9.1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Percentile(tt.xs, tt.p)
			if math.Abs(got-tt.want) > 1e-9 {
				t.Fatalf("Percentile(%v, %v) = %v, want %v", tt.xs, tt.p, got, tt.want)
			}
		})
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Fatal("percentile of empty set should be NaN")
	}
}

func TestSummarizeDoesNotModifyInput(t *testing.T) {
	xs := []float64{3, 1, 2}
	s := Summarize(xs)
	if xs[0] != 3 || xs[1] != 1 {
		t.Fatalf("input modified: %v", xs)
	}
	if s.N != 3 || s.Mean != 2 || s.Min != 1 || s.Max != 3 || s.P50 != 2 {
		t.Fatalf("summary = %+v", s)
	}
}

func seq(a, b int) []float64 {
	var out []float64
	for i := a; i <= b; i++ {
		out = append(out, float64(i))
	}
	return out
}

// The 95% interval against hand-worked values: 10, 12, 14 has mean 12,
// s = 2, t(0.975, 2) = 4.302653, half width 4.302653*2/sqrt(3) = 4.968275.
func TestMeanCI(t *testing.T) {
	iv := MeanCI([]float64{10, 12, 14})
	if iv.N != 3 || iv.Mean != 12 || math.Abs(iv.StdDev-2) > 1e-12 || math.Abs(iv.Hi-12-4.968275) > 1e-5 || math.Abs(12-iv.Lo-4.968275) > 1e-5 || math.Abs(iv.CV-2.0/12) > 1e-12 {
		t.Fatalf("%+v", iv)
	}
	if one := MeanCI([]float64{5}); one.Mean != 5 || !math.IsNaN(one.Lo) || !math.IsNaN(one.CV) {
		t.Fatalf("one value: %+v", one)
	}
}
