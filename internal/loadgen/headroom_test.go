package loadgen

import (
	"context"
	"testing"
)

// SearchMax finds the edge of a monotone predicate by doubling then
// bisection, within its tolerance, in few steps.
func TestSearchMax(t *testing.T) {
	for _, tc := range []struct {
		lo, hi, edge int
		tol          float64
	}{
		{500, 64000, 11000, 0.05},
		{256, 16384, 4096, 0.05},
		{256, 16384, 100, 0.05}, // lo itself fails: halving
		{256, 16384, 0, 0.05},   // nothing holds
		{256, 1000, 5000, 0.05}, // hi holds: the search bound
		{1, 100, 37, 0},
	} {
		steps := 0
		got, err := SearchMax(context.Background(), tc.lo, tc.hi, tc.tol, func(n int) (bool, error) {
			steps++
			return n <= tc.edge, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := min(tc.edge, tc.hi)
		if got > want || float64(want-got) > tc.tol*float64(want)+1 {
			t.Errorf("%+v: got %d, want %d within %g", tc, got, want, tc.tol)
		}
		if steps > 16 {
			t.Errorf("%+v: %d steps", tc, steps)
		}
	}
	if _, err := SearchMax(context.Background(), 0, 10, 0.05, func(int) (bool, error) { return true, nil }); err == nil {
		t.Error("lo 0 accepted")
	}
}
