package sweep

import (
	"math/rand/v2"
	"testing"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"
)

// TestArrivalsInSendOrder: results that finished in any order come out
// in send order, each with its own row, the ones of a pass without rows
// too.
func TestArrivalsInSendOrder(t *testing.T) {
	for _, timed := range []bool{true, false} {
		for _, n := range []int{0, 1, 2, 7, 1000} {
			rng := rand.New(rand.NewPCG(uint64(n), 1))
			a := newArrivals(4, timed)
			for _, i := range rng.Perm(n) {
				a.add(i*3, loadgen.Result{InputTokens: i * 3}, results.Request{Seq: int64(i * 3)})
			}
			rs, rows := a.inSendOrder()
			if len(rs) != n || timed && len(rows) != n || !timed && rows != nil {
				t.Fatalf("n %d timed %v: %d results, %d rows", n, timed, len(rs), len(rows))
			}
			for k := range rs {
				if rs[k].InputTokens != k*3 || timed && rows[k].Seq != int64(k*3) {
					t.Fatalf("n %d timed %v: place %d holds result %d; want %d", n, timed, k, rs[k].InputTokens, k*3)
				}
			}
		}
	}
}
