package loadgen

import (
	"slices"
	"testing"
	"time"
)

func TestSplitCountSums(t *testing.T) {
	for _, c := range []int{0, 1, 5, 7, 64} {
		for n := 1; n <= 5; n++ {
			sum := 0
			for i := range n {
				s := SplitCount(c, i, n)
				if s != c/n && s != c/n+1 {
					t.Fatalf("SplitCount(%d, %d, %d) = %d", c, i, n, s)
				}
				sum += s
			}
			if sum != c {
				t.Fatalf("shares of %d over %d sum to %d", c, n, sum)
			}
		}
	}
}

// Constant shards interleave into the unsharded schedule exactly.
func TestSplitConstantInterleaves(t *testing.T) {
	whole := Schedule{Rate: 40, Arrival: ArrivalConstant}
	want := whole.Offsets(12, 0)
	var got []time.Duration
	for i := range 3 {
		got = append(got, whole.Split(i, 3).Offsets(4, 0)...)
	}
	slices.Sort(got)
	for k := range want {
		if d := got[k] - want[k]; d < -time.Microsecond || d > time.Microsecond {
			t.Fatalf("offset %d: sharded %v, whole %v", k, got[k], want[k])
		}
	}
}

// Poisson shards draw independent streams at λ/n whose sum has rate λ.
func TestSplitPoissonRate(t *testing.T) {
	whole := Schedule{Rate: 200, Arrival: ArrivalPoisson, Seed: 7}
	a, b := whole.Split(0, 2), whole.Split(1, 2)
	if a.Rate != 100 || a.Seed == b.Seed {
		t.Fatalf("shards %+v %+v: want rate 100 and distinct seeds", a, b)
	}
	n := len(a.Offsets(0, 20*time.Second)) + len(b.Offsets(0, 20*time.Second))
	if n < 3800 || n > 4200 {
		t.Fatalf("two shards sent %d in 20 s, want about 4000", n)
	}
}
