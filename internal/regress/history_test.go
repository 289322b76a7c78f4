package regress

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

// TestHistoryShifts: synthetic histories with seeded noise; each case
// shifts some metrics of the new run and says which outcome each metric
// must get (metrics not named must be `same`).
func TestHistoryShifts(t *testing.T) {
	for _, c := range []struct {
		name   string
		sigma  float64
		shift  map[string]float64
		want   map[string]Outcome
		reason map[string]string // a substring of the verdict's reason
	}{
		{
			name:  "10% slower TTFT p50 regresses",
			sigma: 0.02, shift: map[string]float64{"ttft_p50_ms": 1.10},
			want: map[string]Outcome{"ttft_p50_ms": Regressed},
		},
		{
			name:  "10% faster ITL p99 improves",
			sigma: 0.02, shift: map[string]float64{"itl_p99_ms": 0.85},
			want: map[string]Outcome{"itl_p99_ms": Improved},
		},
		{
			name:  "10% less throughput regresses, 10% more req/s improves",
			sigma: 0.02, shift: map[string]float64{"output_tok_s": 0.90, "req_s": 1.10},
			want: map[string]Outcome{"output_tok_s": Regressed, "req_s": Improved},
		},
		{
			// Quiet history: a 2% change is outside the interval, but under
			// the 5% threshold that counts.
			name:  "2% is not flagged at a 5% threshold",
			sigma: 0.004, shift: map[string]float64{"ttft_p50_ms": 1.02, "output_tok_s": 0.98},
			want:   map[string]Outcome{"ttft_p50_ms": Same, "output_tok_s": Same},
			reason: map[string]string{"ttft_p50_ms": "under the 5.0% that counts"},
		},
		{
			// Noisy history: 10% is inside the interval of a σ = 8% history.
			name:  "10% inside a noisy history's interval is the same",
			sigma: 0.08, shift: map[string]float64{"ttft_p50_ms": 1.10},
			want: map[string]Outcome{"ttft_p50_ms": Same},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			hist, cur := history(42, 20, c.sigma, c.shift)
			rep := CheckHistory(hist, cur, Options{})
			if len(rep.Verdicts) != len(DefaultMetrics()) {
				t.Fatalf("%d verdicts, want %d", len(rep.Verdicts), len(DefaultMetrics()))
			}
			for _, v := range rep.Verdicts {
				want, ok := c.want[v.Metric]
				if !ok {
					want = Same
				}
				if v.Outcome != want {
					t.Errorf("%s", v)
					t.Errorf("%s: %s, want %s", v.Metric, v.Outcome, want)
				}
				if v.N != 20 || len(v.Runs) != 20 || v.Method != MethodHistory {
					t.Errorf("%s: n = %d over %d runs by %s, want 20 runs by the prediction interval", v.Metric, v.N, len(v.Runs), v.Method)
				}
				if !(v.Low < v.Old && v.Old < v.High) {
					t.Errorf("%s: center %v outside its interval [%v, %v]", v.Metric, v.Old, v.Low, v.High)
				}
				if sub := c.reason[v.Metric]; sub != "" && !strings.Contains(v.Reason, sub) {
					t.Errorf("%s: reason %q lacks %q", v.Metric, v.Reason, sub)
				}
			}
			if rep.Correction != BenjaminiHochberg || rep.Comparisons != len(DefaultMetrics()) {
				t.Errorf("correction %s over %d comparisons, want benjamini-hochberg over %d", rep.Correction, rep.Comparisons, len(DefaultMetrics()))
			}
		})
	}
}

// TestHistoryDirection: a regression is named by metric and direction,
// and its change is of the right sign.
func TestHistoryDirection(t *testing.T) {
	hist, cur := history(3, 20, 0.02, map[string]float64{"e2el_p99_ms": 1.25})
	rep := CheckHistory(hist, cur, Options{})
	regs := rep.Regressions()
	if len(regs) != 1 || regs[0].Metric != "e2el_p99_ms" || regs[0].Change < 0.15 || regs[0].Better != Lower {
		t.Fatalf("regressions %v, want e2el_p99_ms up ~25%%", regs)
	}
	if !(regs[0].New > regs[0].High) {
		t.Errorf("regressed value %v is not past the interval's high end %v", regs[0].New, regs[0].High)
	}
	if s := regs[0].String(); !strings.Contains(s, "e2el_p99_ms of sweep/128:128/c4 regressed") || !strings.Contains(s, "prediction interval") {
		t.Errorf("String() = %q", s)
	}
}

// TestHistoryFloor: a 50% change of a tiny latency (0.4 ms TTFT) is
// under the 1 ms floor, however clear.
func TestHistoryFloor(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	var hist []*Run
	for i := range 10 {
		hist = append(hist, mkRun(i, mkCell("c", map[string]float64{"ttft_p50_ms": noisy(rng, 0.4, 0.01)})))
	}
	cur := mkRun(10, mkCell("c", map[string]float64{"ttft_p50_ms": 0.6}))
	m, _ := SelectMetrics([]string{"ttft_p50_ms"})
	rep := CheckHistory(hist, cur, Options{Metrics: m})
	if v := rep.Verdicts[0]; v.Outcome != Same || v.Margin < 2 {
		t.Errorf("%s (margin %v): want same, the 1 ms floor being 250%% of 0.4 ms", v, v.Margin)
	}
	// Lowering the floor makes it a regression: floors are overridable.
	m[0].Floor = 0.05
	if v := CheckHistory(hist, cur, Options{Metrics: m}).Verdicts[0]; v.Outcome != Regressed {
		t.Errorf("with a 0.05 ms floor: %s, want regressed", v)
	}
}

// TestHistoryInsufficient: fewer usable runs than MinRuns is
// `insufficient data`, never a pass, and a cell without history too.
func TestHistoryInsufficient(t *testing.T) {
	hist, cur := history(5, 4, 0.02, map[string]float64{"ttft_p50_ms": 3})
	rep := CheckHistory(hist, cur, Options{})
	for _, v := range rep.Verdicts {
		if v.Outcome != Insufficient || v.N != 4 || !strings.Contains(v.Reason, "4 usable earlier runs of this cell, 5 needed") {
			t.Errorf("%s: %s n=%d %q, want insufficient data with 4 of 5 runs", v.Metric, v.Outcome, v.N, v.Reason)
		}
	}
	if rep.Count(Regressed) != 0 || rep.Comparisons != 0 {
		t.Errorf("insufficient history still judged %d comparisons", rep.Comparisons)
	}
	// MinRuns is an option: 3 is enough here, and the tripled TTFT shows.
	if v := verdictOf(CheckHistory(hist, cur, Options{MinRuns: 3}), "ttft_p50_ms"); v.Outcome != Regressed {
		t.Errorf("with min_runs 3: %s, want regressed", v)
	}
	// A cell the history never saw.
	other := mkRun(9, mkCell("sweep/new", baseVals))
	for _, v := range CheckHistory(hist, other, Options{}).Verdicts {
		if v.Outcome != Insufficient || v.N != 0 {
			t.Errorf("new cell: %s n=%d, want insufficient data with no runs", v.Outcome, v.N)
		}
	}
}

// TestHistoryNullsAndExclusions: NULL values are skipped and counted,
// never read as 0; runs not ok, cells not ok and client-bound cells are
// excluded and counted by reason, and their (wild) values change nothing.
func TestHistoryNullsAndExclusions(t *testing.T) {
	hist, cur := history(11, 20, 0.02, nil)
	wild := map[string]float64{}
	for k, v := range baseVals {
		wild[k] = v * 10
	}
	add := func(mut func(r *Run)) {
		r := mkRun(len(hist), mkCell("sweep/128:128/c4", wild))
		mut(r)
		hist = append(hist, r)
	}
	add(func(r *Run) { r.Status = "failed" })
	add(func(r *Run) { r.Status = "interrupted" })
	add(func(r *Run) { r.Status = "crashed" })
	add(func(r *Run) { r.Cells[0].Status = results.StatusError })
	add(func(r *Run) { r.Cells[0].Status = results.StatusSkipped })
	// Send lag over the stage's threshold (from plan.json), and one that the
	// sweep's notes flagged where the threshold is not known.
	add(func(r *Run) {
		r.Cells[0].SendLagP99 = results.Some(12.0)
		r.SendLagThresholdMs = map[string]float64{"sweep": 5}
	})
	add(func(r *Run) {
		r.Cells[0].Notes = "prompts=cold; client-bound: send_lag p99 9.10 ms exceeds 5 ms, so sends left late"
	})
	// An open loop that sent 20% short of its rate.
	add(func(r *Run) {
		r.Cells[0].Rate, r.Cells[0].Arrival, r.Cells[0].SentReqS = 10, "constant", results.Some(8.0)
	})
	// NULL values: two history rows without ttft_p99_ms (not 0!).
	for _, i := range []int{17, 18} {
		hist[i].Cells[0].TTFTP99Ms = nil
	}
	// The current run's shift is planted where only the excluded runs sit.
	cur.ID, cur.StartedAt = "current", t0.AddDate(0, 1, 0)
	cur.Cells[0].ITLP50Ms = nil

	rep := CheckHistory(hist, cur, Options{})
	wantExcl := map[string]int{"run failed": 1, "run interrupted": 1, "run crashed": 1, ReasonCellError: 1, ReasonCellSkipped: 1, ReasonSendLag: 2, ReasonSentRate: 1}
	for k, n := range wantExcl {
		if rep.Excluded[k] != n {
			t.Errorf("report excluded[%q] = %d, want %d (all: %v)", k, rep.Excluded[k], n, rep.Excluded)
		}
	}
	for _, v := range rep.Verdicts {
		if v.Outcome != Same {
			t.Errorf("%s: the excluded runs' values leaked in", v)
		}
		for k, n := range wantExcl {
			if v.Excluded[k] != n {
				t.Errorf("%s: excluded[%q] = %d, want %d", v.Metric, k, v.Excluded[k], n)
			}
		}
		if v.Metric == "ttft_p99_ms" && (v.Excluded[ReasonNull] != 2 || v.N != 18) {
			t.Errorf("ttft_p99_ms: %d NULL skipped, n = %d; want 2 and 18", v.Excluded[ReasonNull], v.N)
		}
		if v.Metric == "itl_p50_ms" {
			t.Errorf("a NULL current value was judged: %s", v)
		}
	}
	if len(rep.Skipped) != 1 || rep.Skipped[0].Metric != "itl_p50_ms" || rep.Skipped[0].Reason != ReasonNull {
		t.Errorf("skipped %v, want itl_p50_ms not measured", rep.Skipped)
	}
	if got := DescribeExcluded(map[string]int{"run failed": 2, ReasonSendLag: 1}); got != "1 client send lag, 2 run failed" {
		t.Errorf("DescribeExcluded = %q", got)
	}
	// The current run, when client-bound itself, is not judged at all.
	cur.Cells[0].Notes = clientBoundNote + " 8 ms exceeds 5 ms"
	if rep := CheckHistory(hist, cur, Options{}); len(rep.Verdicts) != 0 || len(rep.Skipped) != 1 || rep.Skipped[0].Reason != ReasonSendLag {
		t.Errorf("client-bound current cell: %d verdicts, skipped %v", len(rep.Verdicts), rep.Skipped)
	}
}

// TestHistoryExclusionRules: the client-bound and rate rules case by case.
func TestHistoryExclusionRules(t *testing.T) {
	for _, c := range []struct {
		name string
		mut  func(*results.Cell, *Run)
		o    Options
		want string
	}{
		{"ok", func(*results.Cell, *Run) {}, Options{}, ""},
		{"lag under the stage's 20 ms", func(c *results.Cell, r *Run) {
			c.SendLagP99 = results.Some(12.0)
			r.SendLagThresholdMs = map[string]float64{"sweep": 20}
		}, Options{}, ""},
		{"lag over an explicit 10 ms", func(c *results.Cell, r *Run) {
			c.SendLagP99 = results.Some(12.0)
			r.SendLagThresholdMs = map[string]float64{"sweep": 20}
		}, Options{SendLagThresholdMs: 10}, ReasonSendLag},
		{"lag without threshold or note", func(c *results.Cell, r *Run) { c.SendLagP99 = results.Some(12.0) }, Options{}, ""},
		{"poisson 12% short of 100 requests is chance", func(c *results.Cell, r *Run) {
			c.Rate, c.Arrival, c.Burstiness, c.Requests, c.SentReqS = 10, "poisson", 1, 100, results.Some(8.8)
		}, Options{}, ""},
		{"poisson 40% short is not", func(c *results.Cell, r *Run) {
			c.Rate, c.Arrival, c.Burstiness, c.Requests, c.SentReqS = 10, "poisson", 1, 100, results.Some(6.0)
		}, Options{}, ReasonSentRate},
		{"constant 6% short", func(c *results.Cell, r *Run) {
			c.Rate, c.Arrival, c.SentReqS = 10, "constant", results.Some(9.4)
		}, Options{}, ReasonSentRate},
		{"constant 4% short", func(c *results.Cell, r *Run) {
			c.Rate, c.Arrival, c.SentReqS = 10, "constant", results.Some(9.6)
		}, Options{}, ""},
	} {
		cell := mkCell("c", nil)
		r := mkRun(0)
		c.mut(&cell, r)
		if got := Exclusion(&cell, r, c.o.withDefaults()); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if m := SendLagThresholds([]byte(`{"stages":{"sweep":{"kind":"sweep","send_lag_threshold_ms":7.5},"server":{"kind":"launch"}}}`)); len(m) != 1 || m["sweep"] != 7.5 {
		t.Errorf("SendLagThresholds = %v", m)
	}
}

// TestHistoryFalseAlarms measures how often the history check flags a
// regression when nothing changed (a new run drawn like the last 20),
// and how often it catches a real 10% slowdown of TTFT p50 alone, over
// many synthetic histories, with 9 metrics judged per trial. The family
// correction costs power on a lone regression (Benjamini–Hochberg then
// asks p ≤ α/9 of it) and buys a per-run false-alarm rate near α.
func TestHistoryFalseAlarms(t *testing.T) {
	const trials = 600
	for _, c := range []struct {
		sigma      float64
		correction Correction
		maxFalse   float64 // per verdict
		minDetect  float64
	}{
		{0.02, BenjaminiHochberg, 0.005, 0.75},
		{0.03, BenjaminiHochberg, 0.005, 0.30},
		{0.03, NoCorrection, 0.015, 0.60},
		// σ = 10%: the 5% threshold alone would flag a third of the runs;
		// the interval keeps false alarms at its one-sided 1% or below.
		{0.10, NoCorrection, 0.015, 0},
	} {
		var falseFlags, judged, runsFlagged, detected int
		o := Options{Correction: c.correction}
		for i := range trials {
			hist, cur := history(uint64(1000+i), 20, c.sigma, nil)
			rep := CheckHistory(hist, cur, o)
			falseFlags += rep.Count(Regressed)
			judged += len(rep.Verdicts)
			if rep.Count(Regressed) > 0 {
				runsFlagged++
			}
			_, cur2 := history(uint64(1000+i), 20, c.sigma, map[string]float64{"ttft_p50_ms": 1.10})
			if v := verdictOf(CheckHistory(hist, cur2, o), "ttft_p50_ms"); v.Outcome == Regressed {
				detected++
			}
		}
		rate := float64(falseFlags) / float64(judged)
		det := float64(detected) / trials
		t.Logf("σ=%.0f%%, %s: false regressions %d of %d verdicts (%.2f%%), runs with any: %.1f%%; a 10%% TTFT slowdown detected in %.1f%% of %d trials",
			100*c.sigma, c.correction, falseFlags, judged, 100*rate, 100*float64(runsFlagged)/trials, 100*det, trials)
		if rate > c.maxFalse {
			t.Errorf("σ=%v %s: false-alarm rate %.4f over the bound %.4f", c.sigma, c.correction, rate, c.maxFalse)
		}
		if det < c.minDetect {
			t.Errorf("σ=%v %s: detection rate %.3f under %.2f", c.sigma, c.correction, det, c.minDetect)
		}
	}
}

// TestHistoryLinearScale: a series with a 0 is judged on the linear scale.
func TestHistoryLinearScale(t *testing.T) {
	var hist []*Run
	for i := range 10 {
		hist = append(hist, mkRun(i, mkCell("c", map[string]float64{"goodput": float64(i % 2)})))
	}
	m, _ := SelectMetrics([]string{"goodput"})
	v := CheckHistory(hist, mkRun(10, mkCell("c", map[string]float64{"goodput": 0.5})), Options{Metrics: m}).Verdicts[0]
	if v.Method != MethodLinear || v.Outcome != Same || math.Abs(v.Old-0.5) > 1e-12 {
		t.Errorf("%s by %s (old %v), want same by the linear interval around 0.5", v, v.Method, v.Old)
	}
}
