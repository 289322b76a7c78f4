package sweep

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

// TestSweepRefusesWhatTheMachineCannotDo: points that would run the
// machine out of memory, connections or time are vet errors at the field
// that asks for them, with the limit; the limits themselves pass.
func TestSweepRefusesWhatTheMachineCannotDo(t *testing.T) {
	for _, tc := range []struct{ cue, want string }{
		{`concurrency: [1, 1000000000]`, `plan.cue:6:18: stages.sweep.concurrency.1: 1000000000 sessions: at most 100000 per point`},
		{`rates: [1e12]`, `plan.cue:6:9: stages.sweep.rates.0: 1e+12 requests/s: at most 1e+06/s`},
		{`requests: 1000000000000`, `plan.cue:6:1: stages.sweep.requests: 1000000000000 requests per pass: at most 10000000`},
		{`min_requests: 20000000`, `stages.sweep.min_requests: 20000000 requests per pass: at most 10000000`},
		{`rates: [1000], max_inflight: 200000`, `stages.sweep.max_inflight: 200000: at most 100000 requests in flight`},
		{`duration: "48h"`, `stages.sweep.duration: "48h" per pass: at most "24h"`},
		{`min_duration: "100h"`, `stages.sweep.min_duration: "100h" per pass: at most "24h"`},
		{`rates: [1e6], duration: "1h"`, `stages.sweep.duration: "1h" at 1e+06 requests/s is 3600000000 requests per pass: at most 10000000`},
		{`requests: 5000000, iterations: 3`, `stages.sweep.iterations: 3 timed passes of 5000000 requests pool 15000000 requests into one row: at most 10000000`},
		{`cells: [{isl: 100000000, osl: 4}]`, `stages.sweep.cells.0.isl: 100000000 tokens: at most 10000000`},
		{`cells: [{isl: 8, osl: 20000000}]`, `stages.sweep.cells.0.osl: 20000000 tokens: at most 10000000`},
		{`cells: [{isl: 8, osl: 8}, {isl: 8, osl: 9}], concurrency: ` + ladder(6000), `stages.sweep.concurrency: the sweep has 12000 points (2 cells × 6000 concurrency): at most 10000 per sweep stage`},
		{`cells: [for i, _ in ` + ladder(200) + ` {isl: i+1, osl: 8}], rates: ` + ladder(100), `stages.sweep.cells: the sweep has 20000 points (200 cells × 100 rates): at most 10000`},
		{`cells: [for i, _ in ` + ladder(60) + ` {isl: i+1, osl: 8}], concurrency: [1, 2], repeats: 100`, `stages.sweep.repeats: the sweep has 12000 points (60 cells × 2 concurrency × 100 repeats)`},
	} {
		st, p := loadStage(t, `kind: "sweep", target: "http://x"`+"\n"+tc.cue, "")
		err := st.Validate(check(t, p))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got %v\nwant %q", clip(tc.cue), err, tc.want)
		}
	}
	for _, ok := range []string{
		`concurrency: [100000], requests: 100000`,
		`rates: [1e6]`, // the default pass: 10 s of arrivals, 1e7 requests
		`rates: [1000], duration: "24h", requests: 10000000`,
		`requests: 10000000`,
		`requests: 1000000, iterations: 10`,
		`cells: [{isl: 10000000, osl: 10000000}]`,
		`cells: [{isl: 8, osl: 8}], concurrency: ` + ladder(10000),
	} {
		st, p := loadStage(t, `kind: "sweep", target: "http://x"`+"\n"+ok, "")
		if err := st.Validate(check(t, p)); err != nil {
			t.Errorf("%s: %v", clip(ok), err)
		}
	}
}

// clip shortens a long plan fragment for a failure message.
func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// ladder is the CUE list [1, 2, …, n].
func ladder(n int) string {
	var b strings.Builder
	b.WriteString("[")
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, i)
	}
	return b.String() + "]"
}

// TestSweepRefusesDuplicatePoints: a cell or a ladder point given twice
// would be two rows under one cell id; vet says so at the second one.
func TestSweepRefusesDuplicatePoints(t *testing.T) {
	for _, tc := range []struct{ cue, want string }{
		{`cells: [{isl: 8, osl: 4}, {isl: 8, osl: 4}]`, `plan.cue:6:27: stages.sweep.cells.1: the same cell as cells.0 (8:4)`},
		{`concurrency: [1, 4, 1]`, `plan.cue:6:21: stages.sweep.concurrency.2: 1 is already on the ladder (concurrency.0)`},
		{`rates: [2, 2]`, `plan.cue:6:12: stages.sweep.rates.1: 2 is already on the ladder (rates.0)`},
		{`rates: [2, 2.0]`, `stages.sweep.rates.1: 2 is already on the ladder (rates.0)`},
	} {
		st, p := loadStage(t, `kind: "sweep", target: "http://x"`+"\n"+tc.cue, "")
		err := st.Validate(check(t, p))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got %v\nwant %q", tc.cue, err, tc.want)
		}
	}
	for _, ok := range []string{
		`cells: [{isl: 8, osl: 4}, {isl: 4, osl: 8}]`,
		`concurrency: [1, 1], rates: [2]`, // the concurrency ladder is not used
		`rates: [2, 2.5]`,
	} {
		st, p := loadStage(t, `kind: "sweep", target: "http://x"`+"\n"+ok, "")
		if err := st.Validate(check(t, p)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestDryRunEstimateIsNeverNonsense: at the largest allowed points the
// estimate is positive and no faster than the assumed server could serve
// the requests (it once read "6000000000 requests ~490ms", and wrapped
// around to negative durations).
func TestDryRunEstimateIsNeverNonsense(t *testing.T) {
	for _, cue := range []string{
		`cells: [{isl: 8, osl: 4}], concurrency: [100000]`,
		`cells: [{isl: 8, osl: 4}], rates: [1e6]`,
		`cells: [{isl: 8, osl: 4}], concurrency: [1, 4, 8], requests: 10000000`,
		`cells: [{isl: 10000000, osl: 10000000}], concurrency: [1], requests: 10000000`,
	} {
		for _, st := range planOf(t, cue) {
			latency := 0.0 // seconds
			for _, c := range []struct{ isl, osl int }{{8, 4}, {10000000, 10000000}} {
				if strings.Contains(st.ID, fmt.Sprintf("/%d:%d/", c.isl, c.osl)) {
					latency = float64(c.isl)/assumedPrefillTokS + float64(c.osl)/assumedDecodeTokS
				}
			}
			floor := float64(st.Requests) / assumedBatch * latency // seconds
			if st.Estimate <= 0 || st.Estimate.Seconds() < min(floor, float64(math.MaxInt64)/1e9)-1 {
				t.Errorf("%s: %d requests ~%s; the assumed server needs at least %.0f s", st.ID, st.Requests, st.Estimate, floor)
			}
		}
	}
}

// TestPromptFeedGivesEveryRequestItsOwnPrompt: whatever the order and the
// goroutines asking, request i gets src.Prompt(pass, i), and the window
// stays bounded.
func TestPromptFeedGivesEveryRequestItsOwnPrompt(t *testing.T) {
	src := &loadgen.PromptSource{ISL: 16, Seed: 3, CellKey: 16<<32 | 4, PointKey: loadgen.PointKey("s", 4, 0)}
	src.Prepare()
	t.Run("in order, past the window", func(t *testing.T) {
		f := newPromptFeed(src, 1, 0)
		defer f.stop()
		if len(f.slots) != maxAhead {
			t.Fatalf("window %d, want %d", len(f.slots), maxAhead)
		}
		for i := 0; i < 3*maxAhead; i++ {
			if got, want := f.prompt(i), src.Prompt(1, i); got != want {
				t.Fatalf("prompt %d: %q, want %q", i, got, want)
			}
		}
	})
	t.Run("exact count: the window is the pass", func(t *testing.T) {
		f := newPromptFeed(src, 0, 10)
		defer f.stop()
		if len(f.slots) != 10 {
			t.Fatalf("window %d, want 10", len(f.slots))
		}
		for i := 0; i < 12; i++ { // past the end builds on demand
			if got, want := f.prompt(i), src.Prompt(0, i); got != want {
				t.Fatalf("prompt %d: %q, want %q", i, got, want)
			}
		}
	})
	t.Run("concurrent and out of order", func(t *testing.T) {
		f := newPromptFeed(src, 2, 0)
		defer f.stop()
		var next atomic.Int64
		var wg sync.WaitGroup
		var bad atomic.Int64
		for g := 0; g < 16; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= 20000 {
						return
					}
					if i%97 == 0 {
						runtime.Gosched()
					}
					if f.prompt(i) != src.Prompt(2, i) {
						bad.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		if bad.Load() > 0 {
			t.Fatalf("%d requests got another request's prompt", bad.Load())
		}
	})
	t.Run("long prompts: the window is bounded by bytes", func(t *testing.T) {
		big := &loadgen.PromptSource{ISL: 100000, Seed: 3}
		big.Prepare()
		f := newPromptFeed(big, 0, 0)
		defer f.stop()
		if n := len(f.slots) * len(big.Prompt(0, 0)); n > 2*promptBudget {
			t.Fatalf("window of %d prompts, %d bytes", len(f.slots), n)
		}
	})
}

// TestHugePassStartsSendingAtOnce: a point of ten million requests (the
// limit) starts sending at once: nothing proportional to its requests is
// built before the first send (prompts were preallocated, all of them,
// before the pass).
func TestHugePassStartsSendingAtOnce(t *testing.T) {
	_, url := startSim(t, nil)
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, calibrate: "off"
		cells: [{isl: 64, osl: 2}], concurrency: [2], requests: 10000000, warmup: 0`, url), "")
	if err := st.Validate(check(t, p)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rows []results.Cell
	var mu sync.Mutex
	env := &pipeline.Env{Stage: p.Stages[0], Plan: p, Progress: io.Discard, Log: io.Discard,
		Emit: func(c results.Cell, _ results.Requests) error {
			mu.Lock()
			rows = append(rows, c)
			mu.Unlock()
			return nil
		}}
	start := time.Now()
	go func() {
		time.Sleep(1500 * time.Millisecond)
		cancel()
	}()
	_, _ = st.Run(ctx, env)
	took := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	if rows[0].Requests < 10 {
		t.Errorf("%d requests sent in the first 1.5 s of a ten-million-request point (took %s): sending did not start at once", rows[0].Requests, took)
	}
	if took > 5*time.Second {
		t.Errorf("the cancelled point took %s to end", took)
	}
}

// BenchmarkPromptFeed: what a send waits for its prompt, from the feed
// (built ahead) and built on the spot, at short and long prompts. The
// feed's cost is a lock and a slot, whatever the prompt's length; the
// send that builds its own pays the whole prompt.
func BenchmarkPromptFeed(b *testing.B) {
	for _, isl := range []int{128, 2048, 32768} {
		src := &loadgen.PromptSource{ISL: isl, Seed: 1, CellKey: 7}
		src.Prepare()
		b.Run(fmt.Sprintf("feed/isl=%d", isl), func(b *testing.B) {
			f := newPromptFeed(src, 0, 0)
			defer f.stop()
			var wait time.Duration
			for i := 0; b.Loop(); i++ {
				// A send every so often, as an open loop's: the producer
				// keeps ahead between sends.
				if i%len(f.slots) == 0 {
					b.StopTimer()
					for !f.ready(i + len(f.slots) - 1) {
						runtime.Gosched()
					}
					b.StartTimer()
				}
				t0 := time.Now()
				_ = f.prompt(i)
				wait += time.Since(t0)
			}
			b.ReportMetric(float64(wait.Nanoseconds())/float64(b.N), "ns/send")
		})
		b.Run(fmt.Sprintf("inline/isl=%d", isl), func(b *testing.B) {
			var wait time.Duration
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				_ = src.Prompt(0, i)
				wait += time.Since(t0)
			}
			b.ReportMetric(float64(wait.Nanoseconds())/float64(b.N), "ns/send")
		})
	}
}

// ready reports whether request i's prompt is built and waiting.
func (f *promptFeed) ready(i int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.slots[i%len(f.slots)].i == i
}
