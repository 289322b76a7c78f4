package sim

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestSweepCurve prints the table docs/SIM.md shows: a closed-loop sweep of
// concurrency over the default engine. It is opt-in because it takes a
// while:
//
//	BENCHRUN_SIM_CURVE=1 go test -run TestSweepCurve -v ./internal/sim
func TestSweepCurve(t *testing.T) {
	if os.Getenv("BENCHRUN_SIM_CURVE") == "" {
		t.Skip("set BENCHRUN_SIM_CURVE=1 to print the sweep curve")
	}
	cfg := DefaultConfig()
	cfg.Mode = ModeEngine
	cfg.Engine.Jitter = 0.05
	cfg.MaxRecords = 100000
	s, url := startSim(t, cfg)
	const isl, osl = 128, 128
	var b strings.Builder
	fmt.Fprintf(&b, "default engine (max_num_seqs 64, step 2ms + 50us/seq + 10us/prefill token), isl %d, osl 32..224 (mean %d)\n", isl, osl)
	fmt.Fprintf(&b, "| concurrency | output tok/s | speedup vs c=1 | TTFT p50 | TTFT p99 | ITL p50 | ITL p99 | max waiting |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var base float64
	for _, conc := range []int{1, 2, 4, 8, 16, 32, 64, 128, 256} {
		rounds := max(2, 64/conc)
		r := closedLoopVar(t, s, url, conc, rounds, isl, func(w, r int) int { return 32 + (w*37+r*61)%193 },
			func(w, r int) string { return fmt.Sprintf("%s c%d-w%d-r%d", words(isl-1), conc, w, r) })
		if base == 0 {
			base = r.tokS
		}
		fmt.Fprintf(&b, "| %d | %.0f | %.1f | %v | %v | %v | %v | %d |\n", conc, r.tokS, r.tokS/base,
			r.ttftP50.Round(100*time.Microsecond), r.ttftP99.Round(100*time.Microsecond),
			r.itlP50.Round(10*time.Microsecond), r.itlP99.Round(10*time.Microsecond), r.maxWait)
	}
	t.Log("\n" + b.String())
}
