package ktimer

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"
)

// A sleep never ends before its time (less the tolerance of early), in
// either mode, whatever the time asked for.
func TestSleepUntilNeverWakesEarly(t *testing.T) {
	for _, precise := range []bool{true, false} {
		t.Run(fmt.Sprint("precise=", precise), func(t *testing.T) {
			tm := newTimer(t, context.Background(), precise)
			for _, d := range []time.Duration{-time.Millisecond, 0, time.Microsecond, 50 * time.Microsecond, 700 * time.Microsecond, 3 * time.Millisecond} {
				due := time.Now().Add(d)
				if !tm.SleepUntil(due) {
					t.Fatalf("SleepUntil(+%v) = false with a live context", d)
				}
				if now := time.Now(); now.Before(due.Add(-early)) {
					t.Errorf("SleepUntil(+%v) woke %v early", d, due.Sub(now))
				}
			}
		})
	}
}

// A context that ends wakes a sleep far from its time, and every sleep
// after returns at once.
func TestSleepUntilEndsWithTheContext(t *testing.T) {
	for _, precise := range []bool{true, false} {
		t.Run(fmt.Sprint("precise=", precise), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			tm := newTimer(t, ctx, precise)
			done := make(chan bool)
			go func() { done <- tm.SleepUntil(time.Now().Add(time.Hour)) }()
			time.Sleep(20 * time.Millisecond)
			cancel()
			select {
			case ok := <-done:
				if ok {
					t.Fatal("SleepUntil = true for a sleep the context ended")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("an hour's sleep did not end with its context")
			}
			if tm.SleepUntil(time.Now().Add(time.Hour)) {
				t.Fatal("SleepUntil = true after the context ended")
			}
		})
	}
}

// A timer holds no kernel timer until a wait of PreciseFrom or longer
// asks for one.
func TestKernelTimerMadeAtFirstPreciseWait(t *testing.T) {
	tm := New(context.Background())
	defer tm.Stop()
	tm.PreciseFrom = time.Millisecond
	tm.SleepUntil(time.Now().Add(200 * time.Microsecond))
	if tm.k != nil {
		t.Fatal("a wait under PreciseFrom made a kernel timer")
	}
	tm.SleepUntil(time.Now().Add(2 * time.Millisecond))
	if got, want := tm.k != nil, runtime.GOOS == "linux"; got != want {
		t.Errorf("after a wait of 2 ms: kernel timer %v, want %v on %s", got, want, runtime.GOOS)
	}
}

// On Linux the timer is the kernel's; Stop can be called twice.
func TestPreciseOnLinux(t *testing.T) {
	tm := New(context.Background())
	if got, want := tm.Precise(), runtime.GOOS == "linux"; got != want {
		t.Errorf("Precise() = %v on %s, want %v", got, runtime.GOOS, want)
	}
	tm.Stop()
	tm.Stop()
}

// newTimer is New, or with precise false a timer on the runtime's timers
// (what New falls back to without a timerfd).
func newTimer(t *testing.T, ctx context.Context, precise bool) *Timer {
	tm := New(ctx)
	t.Cleanup(tm.Stop)
	if !precise {
		tm.PreciseFrom = time.Hour
	} else if !tm.Precise() {
		t.Skip("no kernel timer on this system")
	}
	return tm
}

// BenchmarkLateness prints how late sleeps of 100 µs to 2 ms end, p50
// and p99, for the kernel timer and for the runtime's timers, in an
// otherwise idle process: the wake-up precision a sender keeping a
// schedule gets from each (docs/METRICS.md).
//
//	go test -run '^$' -bench Lateness -benchtime 2000x ./internal/ktimer
func BenchmarkLateness(b *testing.B) {
	for _, precise := range []bool{true, false} {
		name := map[bool]string{true: "timerfd", false: "go-timer"}[precise]
		b.Run(name, func(b *testing.B) {
			tm := New(context.Background())
			defer tm.Stop()
			if !precise {
				tm.PreciseFrom = time.Hour
			}
			late := make([]float64, 0, b.N)
			for i := 0; i < b.N; i++ {
				d := time.Duration(100+i%20*100) * time.Microsecond
				due := time.Now().Add(d)
				tm.SleepUntil(due)
				late = append(late, float64(time.Since(due))/1e3)
			}
			slices.Sort(late)
			b.ReportMetric(late[len(late)/2], "late-p50-µs")
			b.ReportMetric(late[len(late)*99/100], "late-p99-µs")
		})
	}
}
