package loadgen

import (
	"context"
	"sync"
	"sync/atomic"
)

// RunClosed runs a closed loop: concurrency sessions, each sending its next
// request when the last one ends, until total requests have been sent or
// ctx ends. next(i) builds request i; onResult receives each result (from
// the session goroutines, so it must be safe for concurrent use).
func RunClosed(ctx context.Context, t *Target, concurrency, total int, next func(i int) Request, onResult func(i int, r Result)) {
	if concurrency < 1 {
		concurrency = 1
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	for s := 0; s < concurrency; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(n.Add(1) - 1)
				if i >= total {
					return
				}
				r := t.Do(ctx, next(i))
				onResult(i, r)
			}
		}()
	}
	wg.Wait()
}
