package regress

import (
	"math"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

// robustCell is an ok cell at concurrency 4 over a 10 s window with the
// given values, the machine quiet (0.2 ms p99) and the server's threads
// waiting 20 ms for a CPU, unless the caller changes them.
func robustCell(vals map[string]float64) results.Cell {
	c := mkCell("sweep/64:32/c4", vals)
	c.OSL, c.DurationS = 32, 10
	c.MachineLateP99Ms, c.MachineLateP50Ms = results.Some(0.2), results.Some(0.1)
	c.ServerCPUWaitMs = results.Some(20.0)
	return c
}

// TestHistoryLuckyRun is round three's outlier case: a history of 100,
// 101, 99, 100, 102 tok/s and one lucky run at 250 (on a quiet machine,
// so nothing the machine did explains it). Taken in whole, the lucky run
// widened the interval to [30, 450] and a run at 60 tok/s (−40 %) read
// `same`, exit 0. Its spread is the robust one now (the lucky run lies
// beyond the history's median by many times its median absolute
// deviation, and the interval is learned from the others): 60 is
// regressed, and the lucky run is still counted in N.
func TestHistoryLuckyRun(t *testing.T) {
	m, _ := SelectMetrics([]string{"output_tok_s"})
	var hist []*Run
	for i, x := range []float64{100, 101, 99, 100, 102, 250} {
		hist = append(hist, mkRun(i, robustCell(map[string]float64{"output_tok_s": x})))
	}
	v := verdictOf(CheckHistory(hist, mkRun(9, robustCell(map[string]float64{"output_tok_s": 60})), Options{Metrics: m}), "output_tok_s")
	if v.Outcome != Regressed {
		t.Fatalf("60 tok/s against 100 ± 1 and one lucky 250: %s (interval [%.4g, %.4g], reason %q), want regressed", v.Outcome, v.Low, v.High, v.Reason)
	}
	if v.N != 6 || v.Low < 90 || v.Old < 99 || v.Old > 102 {
		t.Errorf("n %d, center %.4g, interval [%.4g, %.4g]: want the 6 runs counted, the center and interval those of the 5 typical ones", v.N, v.Old, v.Low, v.High)
	}
	if !strings.Contains(v.Reason, "250") {
		t.Errorf("reason %q does not say which run the interval left out", v.Reason)
	}
	// The lucky run's own side: a run at 260 is beyond the interval of
	// the typical runs, but the history showed 250 on a quiet machine:
	// it cannot say `improved` and will not say `same`.
	v = verdictOf(CheckHistory(hist, mkRun(9, robustCell(map[string]float64{"output_tok_s": 260})), Options{Metrics: m}), "output_tok_s")
	if v.Outcome != Unknown || !strings.Contains(v.Reason, "250") {
		t.Errorf("260 tok/s beside a history that once read 250: %s (%q), want unknown naming the 250", v.Outcome, v.Reason)
	}
	// A value like the typical ones stays same.
	v = verdictOf(CheckHistory(hist, mkRun(9, robustCell(map[string]float64{"output_tok_s": 100.5})), Options{Metrics: m}), "output_tok_s")
	if v.Outcome != Same {
		t.Errorf("100.5 tok/s: %s (%q), want same", v.Outcome, v.Reason)
	}
}

// TestHistoryWithBusyNights: a history of 8 runs of which 2 ran beside
// eight busy processes: their ITL read 1.8× and their throughput 0.55×
// the others' while the lateness probe (a sleeper the kernel wakes
// promptly) saw only 1.2 ms and the server's threads waited 5 s for a
// CPU over each 10 s cell (summed over its threads). Taken in, they widened the intervals until a
// run 2× slower in ITL with half the throughput read `same`. They are
// the machine's, not the server's: left out (their starvation accounts
// for their distance), and the slow run is regressed on both.
func TestHistoryWithBusyNights(t *testing.T) {
	m, _ := SelectMetrics([]string{"itl_p50_ms", "output_tok_s"})
	mk := func(i int, itl, tok, late, wait float64) *Run {
		c := robustCell(map[string]float64{"itl_p50_ms": itl, "output_tok_s": tok})
		c.MachineLateP99Ms, c.ServerCPUWaitMs = results.Some(late), results.Some(wait)
		return mkRun(i, c)
	}
	wobble := []float64{1, 1.01, 0.99, 1.005, 0.995, 1.01, 0.99, 1}
	var hist []*Run
	for i, w := range wobble {
		if i == 2 || i == 5 {
			hist = append(hist, mk(i, 5*1.8*w, 400*0.55/w, 1.2, 5000))
			continue
		}
		hist = append(hist, mk(i, 5*w, 400/w, 0.2, 20))
	}
	rep := CheckHistory(hist, mk(9, 10, 200, 0.2, 20), Options{Metrics: m})
	for _, name := range []string{"itl_p50_ms", "output_tok_s"} {
		v := verdictOf(rep, name)
		if v.Outcome != Regressed {
			t.Errorf("%s: %s (interval [%.4g, %.4g], n %d, excluded %v, %q); want regressed", name, v.Outcome, v.Low, v.High, v.N, v.Excluded, v.Reason)
		}
		if v.Excluded[ReasonServerStarved] != 2 {
			t.Errorf("%s: excluded %v, want the 2 busy nights left out as %q", name, v.Excluded, ReasonServerStarved)
		}
	}
	// The same two nights with no starvation recorded are the server's
	// own odd nights: they stay in (N 8), and the robust spread still
	// keeps a run 2× slower from reading `same`.
	for _, r := range hist {
		r.Cells[0].ServerCPUWaitMs = results.Some(20.0)
		r.Cells[0].MachineLateP99Ms = results.Some(0.2)
	}
	rep = CheckHistory(hist, mk(9, 10, 200, 0.2, 20), Options{Metrics: m})
	for _, name := range []string{"itl_p50_ms", "output_tok_s"} {
		if v := verdictOf(rep, name); v.Outcome == Same || v.Outcome == Improved || v.N != 8 {
			t.Errorf("%s without starvation recorded: %s, n %d (%q); want not same, all 8 runs counted", name, v.Outcome, v.N, v.Reason)
		}
	}
}

// TestHistoryNoisyEarlyRuns: a history whose first runs were noisy
// (ttft_p99 at 4, 900 and 60 ms before settling at 40; throughput 55
// and 180 before settling at 100) made intervals like ttft_p99 [0.43,
// 5776] ms, and a run with throughput −46 %, ttft_p99 ×13.6 and
// e2el_p99 ×6 read `same` on all three. None may be `same` now; a change
// larger than any the history has shown is regressed or unknown, and a
// reason says which.
func TestHistoryNoisyEarlyRuns(t *testing.T) {
	m, _ := SelectMetrics([]string{"output_tok_s", "ttft_p99_ms", "e2el_p99_ms"})
	type vals struct{ tok, ttft, e2el float64 }
	series := []vals{{55, 4, 300}, {180, 900, 2500}, {100, 60, 900}, {99, 40, 800}, {101, 41, 810}, {100, 39, 790}, {98, 40, 805}, {102, 40, 800}}
	var hist []*Run
	for i, s := range series {
		hist = append(hist, mkRun(i, robustCell(map[string]float64{"output_tok_s": s.tok, "ttft_p99_ms": s.ttft, "e2el_p99_ms": s.e2el})))
	}
	cur := mkRun(20, robustCell(map[string]float64{"output_tok_s": 54, "ttft_p99_ms": 40 * 13.65, "e2el_p99_ms": 800 * 5.98}))
	rep := CheckHistory(hist, cur, Options{Metrics: m})
	for _, name := range []string{"output_tok_s", "ttft_p99_ms", "e2el_p99_ms"} {
		v := verdictOf(rep, name)
		if v.Outcome == Same || v.Outcome == Improved {
			t.Errorf("%s %+.0f%%: %s (interval [%.4g, %.4g], %q); want regressed or unknown", name, 100*v.Change, v.Outcome, v.Low, v.High, v.Reason)
		}
		if v.Outcome == Unknown && v.Reason == "" {
			t.Errorf("%s: unknown without a reason", name)
		}
		if v.Low < 0 {
			t.Errorf("%s: interval below zero [%.4g, %.4g]", name, v.Low, v.High)
		}
	}
}

// TestHistoryLargerThanAnyIsNotSame: a history so scattered that its
// interval holds anything (throughput between 50 and 150 tok/s, no
// value an outlier of the others) still cannot call a run at 30 tok/s,
// a change larger than any it has shown, `same`: it is unknown, and the
// reason says the history is too noisy to decide. A run within what the
// history has shown stays same.
func TestHistoryLargerThanAnyIsNotSame(t *testing.T) {
	m, _ := SelectMetrics([]string{"output_tok_s"})
	var hist []*Run
	for i, x := range []float64{50, 150, 70, 120, 90, 140, 60, 110} {
		hist = append(hist, mkRun(i, robustCell(map[string]float64{"output_tok_s": x})))
	}
	v := verdictOf(CheckHistory(hist, mkRun(20, robustCell(map[string]float64{"output_tok_s": 30})), Options{Metrics: m}), "output_tok_s")
	if v.Outcome != Unknown && v.Outcome != Regressed {
		t.Fatalf("30 tok/s against a history of 50 to 150: %s (interval [%.4g, %.4g], %q), want unknown or regressed", v.Outcome, v.Low, v.High, v.Reason)
	}
	if v.Outcome == Unknown && !strings.Contains(v.Reason, "too noisy") {
		t.Errorf("reason %q does not say the history is too noisy", v.Reason)
	}
	v = verdictOf(CheckHistory(hist, mkRun(20, robustCell(map[string]float64{"output_tok_s": 65})), Options{Metrics: m}), "output_tok_s")
	if v.Outcome != Same {
		t.Errorf("65 tok/s within the history's 50 to 150: %s (%q), want same", v.Outcome, v.Reason)
	}
}

// TestHistoryIntervalNeverBelowZero: a series with a 0 is judged on the
// linear scale, whose interval would reach below zero for a metric that
// cannot: its low end stops at 0.
func TestHistoryIntervalNeverBelowZero(t *testing.T) {
	m, _ := SelectMetrics([]string{"goodput"})
	var hist []*Run
	for i, x := range []float64{0, 2, 0.5, 3, 0, 1} {
		hist = append(hist, mkRun(i, mkCell("c", map[string]float64{"goodput": x})))
	}
	v := CheckHistory(hist, mkRun(10, mkCell("c", map[string]float64{"goodput": 1})), Options{Metrics: m}).Verdicts[0]
	if v.Method != MethodLinear || v.Low != 0 || math.IsNaN(v.High) || v.High <= 1 {
		t.Errorf("%s by %s: interval [%v, %v], want the linear interval with its low end at 0", v, v.Method, v.Low, v.High)
	}
}

// TestHistoryServerStarvedNight: a nightly run with nothing changed read
// ttft_p50 +12 % while the probe saw the machine as quiet as ever (a
// sleeper is woken promptly) and the local server's threads waited
// 3 s for a CPU during the 10 s cell, against 20 ms in the history's
// runs: the server was starved, not slower. It is inconclusive, with the
// numbers; the same +12 % from a server that waited no longer than
// usual is regressed.
func TestHistoryServerStarvedNight(t *testing.T) {
	m, _ := SelectMetrics([]string{"ttft_p50_ms"})
	var hist []*Run
	for i, w := range []float64{1, 1.01, 0.99, 1.005, 0.995, 1.01, 0.99, 1} {
		hist = append(hist, mkRun(i, robustCell(map[string]float64{"ttft_p50_ms": 40 * w})))
	}
	night := func(wait float64) *Verdict {
		c := robustCell(map[string]float64{"ttft_p50_ms": 40 * 1.12})
		c.ServerCPUWaitMs = results.Some(wait)
		return verdictOf(CheckHistory(hist, mkRun(20, c), Options{Metrics: m}), "ttft_p50_ms")
	}
	v := night(3000)
	want := "the server's threads waited 3000 ms for a CPU during the 10.0 s cell, 2980 ms more than during the history's runs (their median 20 ms)"
	if v.Outcome != Inconclusive || !strings.Contains(v.Reason, want) {
		t.Errorf("a starved server's night: %s (%q), want inconclusive saying %q", v.Outcome, v.Reason, want)
	}
	if v := night(25); v.Outcome != Regressed {
		t.Errorf("the same night, the server waiting as usual: %s (%q), want regressed", v.Outcome, v.Reason)
	}
}

// TestCompareServerStarvedSide: two identical runs compared one against
// the other, the new one's local server starved beside CPU-bound
// neighbours (its threads waited 3 s for a CPU over the 10 s cell, the
// old one's 20 ms) while the probe saw both sides alike: its TTFT +10 %
// is inconclusive, saying so; the same change with both servers waiting
// alike is regressed.
func TestCompareServerStarvedSide(t *testing.T) {
	m, _ := SelectMetrics([]string{"ttft_p50_ms"})
	for _, tc := range []struct {
		name         string
		waitNew      float64
		want         Outcome
		reasonPhrase string
	}{
		{"the new side's server starved", 3000, Inconclusive, "the server's threads waited 3000 ms for a CPU, 2980 ms more than during the other's"},
		{"both servers waited alike", 25, Regressed, ""},
	} {
		old := reqRun(11, "old", 400, 4, 40, 8, 0.02, 450)
		cur := reqRun(12, "new", 400, 4, 44, 8, 0.02, 450)
		lateRuns(0.2, old, cur)
		for r, w := range map[*Run]float64{old: 20, cur: tc.waitNew} {
			r.Cells[0].ServerCPUWaitMs, r.Cells[0].DurationS = results.Some(w), 10
		}
		v := CompareRuns([]*Run{old}, []*Run{cur}, Options{Metrics: m}).Verdicts[0]
		if v.Outcome != tc.want || !strings.Contains(v.Reason, tc.reasonPhrase) {
			t.Errorf("%s: %s (%q), want %s saying %q", tc.name, v.Outcome, v.Reason, tc.want, tc.reasonPhrase)
		}
	}
}
