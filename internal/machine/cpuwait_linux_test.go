//go:build linux

package machine

import (
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/testkit"
)

// TestCPUWaitCountsRunnableThreads: with more busy threads than CPUs,
// this process's threads wait for a CPU, and CPUWait grows by at least
// what the arithmetic forces: each thread wanted a CPU for the whole
// spin, so the spins' total less the CPU time the process got was
// waited for; a process that does not exist reads false.
func TestCPUWaitCountsRunnableThreads(t *testing.T) {
	before, ok := CPUWait(0)
	cpu0, cpuOK := testkit.CPUTime(true)
	if !ok || !cpuOK {
		t.Skip("the kernel keeps no scheduler statistics (/proc/self/task/*/schedstat)")
	}
	threads := runtime.NumCPU() + 2
	prev := runtime.GOMAXPROCS(threads)
	defer runtime.GOMAXPROCS(prev)
	const spin = 300 * time.Millisecond
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var wanted time.Duration // the threads' spins, each from when it began
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			began := time.Now()
			for time.Since(start) < spin {
			}
			mu.Lock()
			wanted += time.Since(began)
			mu.Unlock()
		}()
	}
	wg.Wait()
	after, _ := CPUWait(0)
	cpu1, _ := testkit.CPUTime(true)
	floor := wanted - (cpu1 - cpu0)
	if got := after - before; got < floor {
		t.Errorf("threads waited %s for a CPU, want at least %s (%d threads spinning %s on %d CPUs, %s of CPU)", got, floor, threads, spin, runtime.NumCPU(), cpu1-cpu0)
	} else {
		t.Logf("waited %s (forced at least %s)", got, floor)
	}
	if _, ok := CPUWait(1 << 30); ok {
		t.Errorf("a process that does not exist read a wait")
	}
}

// TestWaitedSince: a thread read at both ends counts its growth, one born
// between counts whole, one that ended counts nothing (never negative).
func TestWaitedSince(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name           string
		earlier, later TaskWaits
		want           time.Duration
	}{
		{"growth", TaskWaits{1: 10 * ms, 2: 5 * ms}, TaskWaits{1: 30 * ms, 2: 5 * ms}, 20 * ms},
		{"born between", TaskWaits{1: 10 * ms}, TaskWaits{1: 10 * ms, 7: 4 * ms}, 4 * ms},
		{"ended between", TaskWaits{1: 10 * ms, 2: 900 * ms}, TaskWaits{1: 12 * ms}, 2 * ms},
		{"reused id reads lower", TaskWaits{3: 50 * ms}, TaskWaits{3: 1 * ms}, 0},
		{"none before", nil, TaskWaits{1: 3 * ms}, 3 * ms},
	} {
		if got := tc.later.WaitedSince(tc.earlier); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if _, ok := ReadTaskWaits([]int{1 << 30}); ok {
		t.Errorf("a process that does not exist read a wait")
	}
	if w, ok := ReadTaskWaits([]int{os.Getpid()}); !ok || len(w) < 1 {
		t.Errorf("this process: %v %v", w, ok)
	}
}
