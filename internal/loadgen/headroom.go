package loadgen

import (
	"context"
	"fmt"
	"runtime/metrics"
	"slices"
	"time"
)

// InUseMemory is the heap and stack memory the Go runtime has in use
// (runtime.MemStats' HeapInuse + StackInuse), read from runtime/metrics.
// Unlike runtime.ReadMemStats it does not stop the world, so sampling it
// while a pass runs does not delay the pass's sends (a sampler calling
// ReadMemStats stops every goroutine each time).
func InUseMemory() uint64 {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(samples)
	var n uint64
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			n += s.Value.Uint64()
		}
	}
	return n
}

// SearchMax finds the largest n in [1, hi] for which ok(n) holds, where ok
// holds up to some point and fails above it (a load the client sustains,
// then one it does not): it doubles from lo until ok fails or hi is
// reached (or, when ok(lo) already fails, halves until it holds), then
// bisects the bracket until its ends are within tol of each other (a
// fraction: 0.05 stops at 5 %). It returns 0 when even ok(1) fails, and
// what it had when ok returns an error or ctx ends.
func SearchMax(ctx context.Context, lo, hi int, tol float64, ok func(n int) (bool, error)) (int, error) {
	if lo < 1 || hi < lo {
		return 0, fmt.Errorf("search bounds [%d, %d]: want 1 <= lo <= hi", lo, hi)
	}
	good, bad := 0, 0
	for n := lo; ; n = min(2*n, hi) {
		if err := ctx.Err(); err != nil {
			return good, err
		}
		pass, err := ok(n)
		if err != nil {
			return good, err
		}
		if !pass {
			bad = n
			break
		}
		good = n
		if n == hi {
			return good, nil
		}
	}
	for good == 0 {
		if bad == 1 {
			return 0, nil
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		n := bad / 2
		pass, err := ok(n)
		if err != nil {
			return 0, err
		}
		if pass {
			good = n
		} else {
			bad = n
		}
	}
	for bad-good > 1 && float64(bad-good) > tol*float64(good) {
		if err := ctx.Err(); err != nil {
			return good, err
		}
		mid := good + (bad-good)/2
		pass, err := ok(mid)
		if err != nil {
			return good, err
		}
		if pass {
			good = mid
		} else {
			bad = mid
		}
	}
	return good, nil
}

// PeakOverlap is the most [start, end] spans open at one instant (an end
// and a start at the same instant do not overlap).
func PeakOverlap(spans [][2]time.Time) int {
	type edge struct {
		at time.Time
		d  int
	}
	edges := make([]edge, 0, 2*len(spans))
	for _, s := range spans {
		edges = append(edges, edge{s[0], 1}, edge{s[1], -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.d - b.d // an end before a start at the same instant
	})
	cur, peak := 0, 0
	for _, e := range edges {
		cur += e.d
		peak = max(peak, cur)
	}
	return peak
}
