package sweep

import (
	"math/rand/v2"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

// TestArrivalsInSendOrder: rows that finished in any order come out in
// send order.
func TestArrivalsInSendOrder(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 1000} {
		rng := rand.New(rand.NewPCG(uint64(n), 1))
		a := newArrivals(4)
		for _, i := range rng.Perm(n) {
			a.add(i*3, results.Request{Seq: int64(i * 3)})
		}
		rows := a.inSendOrder()
		if len(rows) != n {
			t.Fatalf("n %d: %d rows", n, len(rows))
		}
		for k := range rows {
			if rows[k].Seq != int64(k*3) {
				t.Fatalf("n %d: place %d holds row %d; want %d", n, k, rows[k].Seq, k*3)
			}
		}
	}
}
