package regress

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

// lateRuns sets every cell of runs to the machine lateness late (ms p99).
func lateRuns(late float64, runs ...*Run) {
	for _, r := range runs {
		for i := range r.Cells {
			r.Cells[i].MachineLateP99Ms = results.Some(late)
		}
	}
}

// TestHistoryMachineLateness: a value outside its history's interval is
// inconclusive when the machine was later during the cell than during
// the history's runs by enough to explain it, and a regression when it
// was not (a quiet machine; a history as busy as the cell, whose spread
// already holds that noise; a change larger than the extra lateness).
func TestHistoryMachineLateness(t *testing.T) {
	m, _ := SelectMetrics([]string{"ttft_p50_ms", "tpot_p50_ms"})
	for _, tc := range []struct {
		name          string
		hist, now     float64 // machine lateness, ms p99
		ttftShift     float64
		tpotShift     float64
		ttft, tpot    Outcome
		reasonContain string
	}{
		{"busy night, same server", 0.1, 7, 1.12, 1, Inconclusive, Same, "up to 7.00 ms late (p99) during the cell, 6.90 ms more than during the history's runs (their median p99 0.10 ms)"},
		{"quiet night, slower server", 0.1, 0.1, 1.12, 1.1, Regressed, Regressed, ""},
		{"as busy as the history", 7, 7, 1.12, 1.1, Regressed, Regressed, ""},
		// TPOT spreads a late write over its 127 gaps: 7 ms explains
		// 0.06 ms of it, not the 0.8 ms of a 10% slower server.
		{"busy night, slower between tokens", 0.1, 7, 1, 1.1, Same, Regressed, ""},
		{"busy night, much slower", 0.1, 7, 1.5, 1, Regressed, Same, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs, cur := history(3, 10, 0.005, map[string]float64{"ttft_p50_ms": tc.ttftShift, "tpot_p50_ms": tc.tpotShift})
			lateRuns(tc.hist, runs...)
			lateRuns(tc.now, cur)
			for _, r := range append(runs, cur) {
				r.Cells[0].OSL = 128
			}
			rep := CheckHistory(runs, cur, Options{Metrics: m})
			tt, tp := verdictOf(rep, "ttft_p50_ms"), verdictOf(rep, "tpot_p50_ms")
			if tt.Outcome != tc.ttft || tp.Outcome != tc.tpot {
				t.Errorf("ttft %s, tpot %s; want %s, %s\n%s\n%s", tt.Outcome, tp.Outcome, tc.ttft, tc.tpot, tt, tp)
			}
			if tc.reasonContain != "" && !strings.Contains(tt.Reason, tc.reasonContain) {
				t.Errorf("reason %q lacks %q", tt.Reason, tc.reasonContain)
			}
			if tt.Outcome == Inconclusive && tt.Late <= 0 {
				t.Errorf("inconclusive without the lateness it allowed: %+v", tt)
			}
		})
	}
}

// TestHistoryWithoutRatchet: runs that failed their own checks stay in
// the history, the values they called regressed are kept out of the
// interval (it does not absorb them), and a lasting change becomes the
// baseline once half the window shows it, reported as a change of level
// at the run where it began; until then the verdict says it is pending.
func TestHistoryWithoutRatchet(t *testing.T) {
	m, _ := SelectMetrics([]string{"ttft_p50_ms"})
	rng := rand.New(rand.NewPCG(4, 4))
	mk := func(i int, v float64, regressed bool) *Run {
		r := mkRun(i, mkCell("sweep/128:128/c4", map[string]float64{"ttft_p50_ms": noisy(rng, v, 0.005)}))
		if regressed {
			r.Status, r.FailedChecks = "failed", true
			r.Regressed = map[string]bool{marked("sweep/128:128/c4", "ttft_p50_ms"): true}
		}
		return r
	}
	var hist []*Run
	for i := range 8 {
		hist = append(hist, mk(i, 40, false))
	}
	// A run that failed its checks only is usable; one that failed to
	// measure is not.
	infra := mk(8, 40, false)
	infra.Status = "failed"
	hist = append(hist, infra)

	// The night it got slower: regressed.
	cur := mk(20, 44, false)
	v := verdictOf(CheckHistory(hist, cur, Options{Metrics: m}), "ttft_p50_ms")
	if v.Outcome != Regressed || v.Excluded["run failed"] != 1 {
		t.Fatalf("first slower night: %s (excluded %v)", v, v.Excluded)
	}
	// The nights after: still regressed, the flagged nights not absorbed,
	// the pending change of level said.
	for i := range 3 {
		hist = append(hist, mk(9+i, 44, true))
	}
	v = verdictOf(CheckHistory(hist, mk(21, 44, false), Options{Metrics: m}), "ttft_p50_ms")
	if v.Outcome != Regressed || v.Excluded[ReasonRegressed] != 3 || v.PendingLevel == nil || v.PendingLevel.Run != "run009" ||
		!strings.Contains(v.Reason, "changed level at run run009 (+9.") || !strings.Contains(v.Reason, "once 10 runs show it") {
		t.Fatalf("three runs into the new level: %s (excluded %v, pending %+v)", v, v.Excluded, v.PendingLevel)
	}
	// Ten nights at the new level: it is the baseline, and a run at it
	// is the same, judged against it, the change reported where it began.
	for i := range 7 {
		hist = append(hist, mk(12+i, 44, true))
	}
	v = verdictOf(CheckHistory(hist, mk(22, 44, false), Options{Metrics: m}), "ttft_p50_ms")
	if v.Outcome != Same || v.LevelChange == nil || v.LevelChange.Run != "run009" || v.N != 10 || !strings.Contains(v.Reason, "changed level at run run009") {
		t.Fatalf("after ten runs at the new level: %s (level %+v)", v, v.LevelChange)
	}
	// And going back to the old level is now a change for the better.
	if v := verdictOf(CheckHistory(hist, mk(23, 40, false), Options{Metrics: m}), "ttft_p50_ms"); v.Outcome != Improved {
		t.Fatalf("back to 40 ms: %s", v)
	}
}

// TestInconclusiveHistoryIsLeftOut: a value its own run could not judge,
// because the machine's lateness explained its change, is kept out of
// the interval as a regressed one is: taken in, two such nights widened
// the interval until a lasting 20% slowdown on a quiet night read as
// same.
func TestInconclusiveHistoryIsLeftOut(t *testing.T) {
	m, _ := SelectMetrics([]string{"ttft_p50_ms"})
	rng := rand.New(rand.NewPCG(5, 5))
	mk := func(i int, v float64, inconclusive bool) *Run {
		r := mkRun(i, mkCell("sweep/128:128/c4", map[string]float64{"ttft_p50_ms": noisy(rng, v, 0.005)}))
		if inconclusive {
			r.Inconclusive = map[string]bool{marked("sweep/128:128/c4", "ttft_p50_ms"): true}
		}
		return r
	}
	var hist []*Run
	for i := range 6 {
		hist = append(hist, mk(i, 40, false))
	}
	hist = append(hist, mk(6, 80, true), mk(7, 40, false), mk(8, 75, true))
	v := verdictOf(CheckHistory(hist, mk(20, 48, false), Options{Metrics: m}), "ttft_p50_ms")
	if v.Outcome != Regressed || v.Excluded[ReasonInconclusive] != 2 || v.N != 7 {
		t.Fatalf("a 20%% slowdown against a history with two late nights: %s (n %d, excluded %v)", v, v.N, v.Excluded)
	}
	// The same nights unmarked (a run before the machine was judged)
	// widen the interval: what the mark is for.
	for _, r := range hist {
		r.Inconclusive = nil
	}
	if v := verdictOf(CheckHistory(hist, mk(21, 48, false), Options{Metrics: m}), "ttft_p50_ms"); v.Outcome == Regressed {
		t.Fatalf("the unmarked history held its late nights and still called 48 regressed: %s; the test shows nothing", v)
	}
}

// TestLateHistoryNightIsLeftOut: one history run measured while the
// machine ran its event loop 20 ms late read itl_p50 at 15 ms against
// the others' 2 ms; taken in, its spread made a tenfold slowdown on a
// quiet night "same". It is left out as the machine's, which its
// lateness accounts for; the same value on a quiet machine stays in (it
// is the server's, however odd).
func TestLateHistoryNightIsLeftOut(t *testing.T) {
	m, _ := SelectMetrics([]string{"itl_p50_ms"})
	rng := rand.New(rand.NewPCG(6, 6))
	mk := func(i int, itl, late float64) *Run {
		c := mkCell("sweep/16:8/c4", map[string]float64{"itl_p50_ms": noisy(rng, itl, 0.01)})
		c.MachineLateP99Ms = results.Some(late)
		return mkRun(i, c)
	}
	build := func(outlierLate float64) []*Run {
		var hist []*Run
		for i := range 3 {
			hist = append(hist, mk(i, 2, 0.2))
		}
		return append(hist, mk(3, 15, outlierLate))
	}
	v := verdictOf(CheckHistory(build(20), mk(9, 20, 0.2), Options{Metrics: m, MinRuns: 3}), "itl_p50_ms")
	if v.Outcome != Regressed || v.Excluded[ReasonMachineLate] != 1 || v.N != 3 {
		t.Fatalf("tenfold slower against a history with one late night: %s (n %d, excluded %v)", v, v.N, v.Excluded)
	}
	// The odd night on a quiet machine is the server's: it stays in, and
	// its spread holds the slowdown.
	v = verdictOf(CheckHistory(build(0.2), mk(9, 20, 0.2), Options{Metrics: m, MinRuns: 3}), "itl_p50_ms")
	if v.Excluded[ReasonMachineLate] != 0 || v.N != 4 || v.Outcome == Regressed {
		t.Fatalf("the same night on a quiet machine: %s (n %d, excluded %v); want kept, and its spread holding 20 ms", v, v.N, v.Excluded)
	}
	// A late read joins token events, and their gaps read near 0: the
	// night whose itl_p50 read 0.01 ms with the loop 20 ms late is the
	// machine's too (the tenfold slowdown is regressed, n = 3).
	low := func(outlierLate float64) []*Run {
		var hist []*Run
		for i := range 3 {
			hist = append(hist, mk(i, 2, 0.2))
		}
		return append(hist, mk(3, 0.01, outlierLate))
	}
	v = verdictOf(CheckHistory(low(20), mk(9, 20, 0.2), Options{Metrics: m, MinRuns: 3}), "itl_p50_ms")
	if v.Outcome != Regressed || v.Excluded[ReasonMachineLate] != 1 || v.N != 3 {
		t.Fatalf("tenfold slower against a history with one joined-events night: %s (n %d, excluded %v)", v, v.N, v.Excluded)
	}
	// A latency the machine can only lengthen: a TTFT far below the
	// others on a late night is not the machine's, and stays.
	tm, _ := SelectMetrics([]string{"ttft_p50_ms"})
	mkT := func(i int, ttft, late float64) *Run {
		c := mkCell("sweep/16:8/c4", map[string]float64{"ttft_p50_ms": ttft})
		c.MachineLateP99Ms = results.Some(late)
		return mkRun(i, c)
	}
	th := []*Run{mkT(0, 20, 0.2), mkT(1, 20.1, 0.2), mkT(2, 19.9, 0.2), mkT(3, 5, 20)}
	if v := verdictOf(CheckHistory(th, mkT(9, 20, 0.2), Options{Metrics: tm, MinRuns: 3}), "ttft_p50_ms"); v.Excluded[ReasonMachineLate] != 0 {
		t.Fatalf("a fast TTFT on a late night was left out as the machine's: %s (excluded %v)", v, v.Excluded)
	}
	// Lateness too small to account for the deviation: kept.
	v = verdictOf(CheckHistory(build(3), mk(9, 20, 0.2), Options{Metrics: m, MinRuns: 3}), "itl_p50_ms")
	if v.Excluded[ReasonMachineLate] != 0 || v.N != 4 {
		t.Fatalf("a night 3 ms late, 13 ms off: %s (n %d, excluded %v); want kept", v, v.N, v.Excluded)
	}
}

// TestJoinedEventsNightIsLeftOut: beside busy neighbours a 2 ms
// simulator's token events came joined in one socket read, and a history
// run's itl_p50 read 0.01 ms with the probe quiet (a sleeper is woken
// promptly): the merged tenfold slowdown then read "same". Its gaps were
// the reads', and it is left out (events_joined_pct over 50); the same
// value with its events apart stays.
func TestJoinedEventsNightIsLeftOut(t *testing.T) {
	m, _ := SelectMetrics([]string{"itl_p50_ms"})
	mk := func(i int, itl, joined float64) *Run {
		c := mkCell("sweep/16:8/c4", map[string]float64{"itl_p50_ms": itl})
		c.MachineLateP99Ms, c.EventsJoinedPct = results.Some(0.2), results.Some(joined)
		return mkRun(i, c)
	}
	hist := []*Run{mk(0, 2.0, 1), mk(1, 2.01, 2), mk(2, 1.99, 1), mk(3, 0.01, 80)}
	v := verdictOf(CheckHistory(hist, mk(9, 20, 1), Options{Metrics: m, MinRuns: 3}), "itl_p50_ms")
	if v.Outcome != Regressed || v.Excluded[ReasonEventsJoined] != 1 || v.N != 3 {
		t.Fatalf("tenfold slower against a history with one joined-events night: %s (n %d, excluded %v)", v, v.N, v.Excluded)
	}
	hist[3] = mk(3, 0.01, 10)
	if v := verdictOf(CheckHistory(hist, mk(9, 20, 1), Options{Metrics: m, MinRuns: 3}), "itl_p50_ms"); v.Excluded[ReasonEventsJoined] != 0 || v.N != 4 {
		t.Fatalf("the same value with its events apart was left out: %s (excluded %v)", v, v.Excluded)
	}
}

// TestCompareMachineLateness: a two-run comparison's regression is
// inconclusive when the slower side's machine ran tasks later than the
// other side's by enough to explain the change, and stays a regression
// when it was not (both sides quiet; the same lateness both sides; the
// faster side the late one, whose lateness could only have hidden the
// change; a change larger than the extra lateness).
func TestCompareMachineLateness(t *testing.T) {
	m, _ := SelectMetrics([]string{"ttft_p50_ms", "tpot_p50_ms"})
	for _, tc := range []struct {
		name      string
		old, new  float64 // machine lateness, ms p99
		p50       float64 // machine lateness, ms p50, both sides (0: not measured)
		ttftNew   float64 // the new side's TTFT (the old side's is 40 ms)
		wantTTFT  Outcome
		wantLater string
		waitOld   float64 // the old side's local server's CPU wait, ms (the new side's is 0)
	}{
		{"quiet both sides", 0.2, 0.3, 0, 44, Regressed, "", 0},
		{"new side late by enough", 0.2, 6, 0, 44, Inconclusive, "new", 0},
		{"both sides as late", 6, 6, 0, 44, Regressed, "", 0},
		{"old side late: could only hide the change", 6, 0.2, 0, 44, Regressed, "", 0},
		{"a change past the extra lateness", 0.2, 3, 0, 52, Regressed, "", 0},
		{"old side late, new faster", 6, 0.2, 0, 36, Inconclusive, "old", 0},
		// A median moves with the machine's typical lateness, not its
		// tail's: a few late wakes on the new side (p99) with the p50
		// the same both sides explain no median's change.
		{"new side's tail late, its p50 not", 0.2, 6, 0.05, 44, Regressed, "", 0},
		// Both sides' machines disturbed: the new side's probe a little
		// later, which could only have hidden an improvement, and the old
		// side's server starved, which explains it. The old side's is
		// told: trying the new side's alone called an identical pair
		// improved.
		{"new side a little late, old side's server starved, new faster", 0.2, 0.5, 0, 36, Inconclusive, "old", 4000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := reqRun(11, "old", 400, 4, 40, 8, 0.02, 450)
			new := reqRun(12, "new", 400, 4, tc.ttftNew, 8, 0.02, 450)
			lateRuns(tc.old, old)
			lateRuns(tc.new, new)
			if tc.p50 > 0 {
				old.Cells[0].MachineLateP50Ms = results.Some(tc.p50)
				new.Cells[0].MachineLateP50Ms = results.Some(tc.p50)
			}
			if tc.waitOld > 0 {
				old.Cells[0].ServerCPUWaitMs, new.Cells[0].ServerCPUWaitMs = results.Some(tc.waitOld), results.Some(0.0)
			}
			rep := CompareRuns([]*Run{old}, []*Run{new}, Options{Metrics: m})
			for _, v := range rep.Verdicts {
				switch v.Metric {
				case "ttft_p50_ms":
					want := tc.wantTTFT
					if tc.ttftNew < 40 && want == Regressed {
						want = Improved
					}
					if v.Outcome != want {
						t.Fatalf("ttft: %s, want %s (%s)", v.Outcome, want, v.Reason)
					}
					if want == Inconclusive && (!strings.Contains(v.Reason, "during the "+tc.wantLater+" side's cell") || v.Late <= 0) {
						t.Errorf("ttft: reason %q, late %v", v.Reason, v.Late)
					}
				case "tpot_p50_ms":
					// The same ITL both sides: never a regression.
					if v.Outcome == Regressed || v.Outcome == Improved {
						t.Errorf("tpot: %s", v)
					}
				}
			}
		})
	}
}
