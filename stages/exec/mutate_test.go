package exec

import (
	"math/rand"
	"testing"
	"time"
)

// TestMutatedOutputs is the fuzz targets' check run on deterministic
// mutations of the fixtures for a moment in every test run (fuzzing runs
// only when asked): no parse may panic, hang or make a row sinks cannot
// store.
func TestMutatedOutputs(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var seeds [][]byte
	for _, fx := range fixtures {
		seeds = append(seeds, readFixture(t, fx.file))
	}
	deadline := time.Now().Add(2 * time.Second)
	n := 0
	for time.Now().Before(deadline) {
		b := append([]byte(nil), seeds[r.Intn(len(seeds))]...)
		for k := 0; k < 1+r.Intn(8); k++ {
			switch r.Intn(3) {
			case 0:
				if len(b) > 0 {
					b[r.Intn(len(b))] = byte(r.Intn(256))
				}
			case 1:
				if len(b) > 1 {
					i := r.Intn(len(b))
					b = append(b[:i], b[i+1:]...)
				}
			case 2:
				i := r.Intn(len(b) + 1)
				b = append(b[:i], append([]byte{"0123456789e.-{}[]\",:\n"[r.Intn(21)]}, b[i:]...)...)
			}
		}
		parseAll := func() time.Duration {
			start := time.Now()
			recs, _ := parseLlamaBench(b)
			checkRecords(t, recs)
			recs, _ = parseMLX(b)
			checkRecords(t, recs)
			for _, p := range []string{parserJSON, parserJSONL, parserCSV} {
				recs, _ = parseGeneric(p, b, genericFields)
				checkRecords(t, recs)
			}
			return time.Since(start)
		}
		// An input the parsers choke on is slow every time; a busy
		// machine's preemption is not: the fastest of three tries judges.
		if d := parseAll(); d > 200*time.Millisecond {
			best := d
			for range 2 {
				best = min(best, parseAll())
			}
			if best > 200*time.Millisecond {
				t.Fatalf("slow (%s, the fastest of three) on %q", best, b)
			}
		}
		n++
	}
	t.Logf("%d mutated outputs parsed", n)
}
