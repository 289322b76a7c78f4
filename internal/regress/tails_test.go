package regress

import (
	"math"
	"strings"
	"testing"
)

// TestCompareTailTooFewSamples: a p99 of 8 requests is their largest, so
// one run against one decides no p99 from 8 a side, however far apart
// (issue 49: `itl_p99_ms 5.71 → 8.88 (+55.5 %), p=0.013, 8+8, regressed`
// from two identical runs): it is unknown, "too few samples", with the
// requests a side that would bound it: 368 for a TTFT p99, 368 gaps at 16
// a request (23) for an ITL p99. The medians of the same runs are judged.
func TestCompareTailTooFewSamples(t *testing.T) {
	a := reqRun(5, "a", 8, 1, 23.5, 8, 0.1, 450)
	b := reqRun(6, "b", 8, 1, 23.5*1.55, 8*1.55, 0.1, 450)
	rep := CompareRuns([]*Run{a}, []*Run{b}, Options{})
	for metric, more := range map[string]int{"ttft_p99_ms": 360, "e2el_p99_ms": 360, "itl_p99_ms": 15} {
		v := verdictOf(rep, metric)
		if v.Outcome != Unknown || !strings.Contains(v.Reason, "too few samples") || v.MoreRequests != more {
			t.Errorf("%s: %s (%s; %d more requests a side), want unknown, too few samples, %d more", metric, v.Outcome, v.Reason, v.MoreRequests, more)
		}
	}
	if v := verdictOf(rep, "ttft_p50_ms"); v.Outcome != Regressed {
		t.Errorf("ttft_p50_ms of 8 a side 55%% slower: %s (%s), want regressed", v.Outcome, v.Reason)
	}
}

// TestCompareUndecidedSaysWhatTheNumbersSay: the hint of an unknown
// verdict follows from its interval (issue 49, item 5): a change of
// 6.7× from 6 noisy requests a side needs several more requests, not
// "about 1"; a change of +27 % past a ±5 % threshold does not "sit at the
// threshold"; a change of +0.05 % undecided says how many requests would
// show it within the margin.
func TestCompareUndecidedSaysWhatTheNumbersSay(t *testing.T) {
	for _, tc := range []struct {
		name          string
		n, k          int
		sigma, factor float64
	}{
		{"6.7x from 6 a side", 6, 1, 1.0, 3.76},
		{"+27% from 8", 8, 1, 0.3, 1},
		{"+0.05% from 40", 40, 4, 0.3, 1.0005},
	} {
		a := reqRun(5, "a", tc.n, tc.k, 23.5, 8, tc.sigma, 450)
		b := reqRun(6, "b", tc.n, tc.k, 23.5*tc.factor, 8*tc.factor, tc.sigma, 450)
		rep := CompareRuns([]*Run{a}, []*Run{b}, Options{})
		for _, v := range rep.Verdicts {
			if v.Method != MethodBootstrap || v.Outcome != Unknown || strings.Contains(v.Reason, "too few samples") {
				continue
			}
			lr, lm := absLog(v.Change), absLog(v.Margin)
			if strings.Contains(v.Reason, "sits at") && (lr < 0.8*lm || lr > 1.25*lm) {
				t.Errorf("%s: %s %+.1f%% against ±%.1f%%: %q", tc.name, v.Metric, 100*v.Change, 100*v.Margin, v.Reason)
			}
			if strings.Contains(v.Reason, "about 1 more request") {
				t.Errorf("%s: %s: %q", tc.name, v.Metric, v.Reason)
			}
			if v.MoreRequests == 0 && !strings.Contains(v.Reason, "sits at") && !strings.Contains(v.Reason, "100×") && !strings.Contains(v.Reason, "after") {
				t.Errorf("%s: %s: no count and no reason for none: %q", tc.name, v.Metric, v.Reason)
			}
		}
	}
}

func absLog(x float64) float64 {
	if x < 0 {
		x = -x
	}
	return logOnePlus(x)
}

func logOnePlus(x float64) float64 { return math.Log1p(x) }
