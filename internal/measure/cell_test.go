package measure

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// okReq is a finished request sent at t0+at: ttft, e2el and its event gaps
// in ms, one token per event unless tokens says otherwise.
func okReq(at time.Duration, lag, ttft, e2el float64, gaps []float64, tokens []int64) results.Request {
	if tokens == nil {
		tokens = make([]int64, len(gaps)+1)
		for i := range tokens {
			tokens[i] = 1
		}
	}
	out := int64(0)
	for _, n := range tokens {
		out += n
	}
	return results.Request{SentAt: t0.Add(at), SendLagMs: lag, TTFTMs: results.Some(ttft), E2ELMs: results.Some(e2el),
		InputTokens: 100, OutputTokens: out, Chunks: int64(len(tokens)), ChunkGapsMs: gaps, ChunkTokens: tokens, Status: results.StatusOK}
}

func failedReq(at time.Duration, lag float64, err string) results.Request {
	return results.Request{SentAt: t0.Add(at), SendLagMs: lag, Status: results.StatusError, Error: err}
}

func near(p *float64, want float64) bool { return p != nil && math.Abs(*p-want) < 1e-9 }

func TestFillCell(t *testing.T) {
	reqs := []results.Request{
		okReq(0, 1, 10, 40, []float64{10, 20}, nil),                      // tpot 15, max gap 20
		okReq(time.Second, 3, 30, 50, []float64{4, 8}, []int64{1, 2, 2}), // 5 tokens: tpot 5
		failedReq(2*time.Second, 5, "connection refused"),
	}
	var row results.Cell
	FillCell(&row, results.AsRequests(reqs), CellWindow{Span: 4 * time.Second, SendIntervals: 2, SendSpan: 2 * time.Second}, SLO{TTFTMs: 20})

	if row.Requests != 3 || row.Completed != 2 || row.Failed != 1 {
		t.Errorf("counts %d/%d/%d", row.Requests, row.Completed, row.Failed)
	}
	// Latencies from the two that finished only; send lag from all three.
	for name, c := range map[string]struct {
		got  *float64
		want float64
	}{
		"ttft mean":       {row.TTFTMs, 20},
		"ttft max":        {row.TTFTMaxMs, 30},
		"ttft_sched max":  {row.TTFTSchedMaxMs, 33},
		"e2el_sched mean": {row.E2ELSchedMs, 47},
		"itl max":         {row.ITLMaxMs, 20},
		"itl_tok max":     {row.ITLTokMaxMs, 20},
		"itl_tok mean":    {row.ITLTokMs, 9},    // gap k shares event k+1's tokens: 4/2, not 4/1
		"itl_tok p50":     {row.ITLTokP50Ms, 7}, // 10, 20 (a token each), 4 and 8 over two tokens each: 10, 20, 2, 4
		"tpot mean":       {row.TPOTMs, 10},
		"ntpot mean":      {row.NTPOTMs, (40.0/3 + 50.0/5) / 2},
		"send lag mean":   {row.SendLagMs, 3},
		"req/s":           {row.ReqS, 0.5},
		"output tok/s":    {row.OutputTokS, 8.0 / 4},
		"total tok/s":     {row.TotalTokS, 208.0 / 4},
		"goodput":         {row.Goodput, 0.25}, // only the first met ttft ≤ 20
		"goodput ratio":   {row.GoodputRatio, 1.0 / 3},
		"sent req/s":      {row.SentReqS, 1},
		"prefill tok/s":   {row.PrefillTokS, 200 / 0.040},
		"effective isl":   {row.EffectiveISL, 100},
		"effective osl":   {row.EffectiveOSL, 4},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", name, deref(c.got), c.want)
		}
	}
	if row.DurationS != 4 || row.AdmittedTok != 200 || row.Retires != 2 {
		t.Errorf("duration %v admitted %d retires %d", row.DurationS, row.AdmittedTok, row.Retires)
	}
	if row.Status != results.StatusError || row.Reason != "1 of 3 requests failed; first: connection refused" {
		t.Errorf("status %s %q", row.Status, row.Reason)
	}
	// User-stamped rows have no stamp delays, whatever the requests carry.
	if row.StampDelayP50Ms != nil {
		t.Errorf("stamp delay %v on a row without kernel stamps", *row.StampDelayP50Ms)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// A cell that measured nothing is NULL in every latency and rate, never 0;
// a window over requests that all failed still measured 0 tokens/s.
func TestFillCellNothingMeasured(t *testing.T) {
	row := results.Cell{TTFTMs: results.Some(5.0), ReqS: results.Some(9.0), SentReqS: results.Some(9.0)} // stale values are cleared
	FillCell(&row, nil, CellWindow{}, SLO{})
	if row.TTFTMs != nil || row.ReqS != nil || row.SentReqS != nil || row.GoodputRatio != nil || row.EffectiveOSL != nil || row.PrefillTokS != nil {
		t.Errorf("no requests: ttft %v req/s %v sent %v goodput ratio %v", row.TTFTMs, row.ReqS, row.SentReqS, row.GoodputRatio)
	}
	if row.Status != results.StatusError || row.Reason != "no request was sent" {
		t.Errorf("status %s %q", row.Status, row.Reason)
	}

	FillCell(&row, results.AsRequests([]results.Request{failedReq(0, 0, "boom")}), CellWindow{Span: time.Second}, SLO{})
	if row.TTFTP50Ms != nil || row.ITLP99Ms != nil || !near(row.OutputTokS, 0) || !near(row.GoodputRatio, 0) || !near(row.SendLagMs, 0) {
		t.Errorf("all failed: ttft %v itl %v output tok/s %v goodput ratio %v", row.TTFTP50Ms, row.ITLP99Ms, deref(row.OutputTokS), deref(row.GoodputRatio))
	}
	if !strings.HasSuffix(row.Reason, "first: boom") {
		t.Errorf("reason %q", row.Reason)
	}
}

// The stamp delays are the finished requests' events', on a kernel-stamped
// row only.
func TestFillCellStampDelays(t *testing.T) {
	a := okReq(0, 0, 10, 30, []float64{10, 10}, nil)
	a.StampDelaysMs = []float64{1, 1, 1}
	b := okReq(time.Second, 0, 10, 30, []float64{10, 10}, nil)
	b.StampDelaysMs = []float64{3, 3, 3}
	row := results.Cell{StampSource: "kernel"}
	FillCell(&row, results.AsRequests([]results.Request{a, b, failedReq(2*time.Second, 0, "x")}), CellWindow{Span: time.Second}, SLO{})
	if !near(row.StampDelayP50Ms, 2) || !near(row.StampDelayP99Ms, 3) {
		t.Errorf("stamp delay p50 %v p99 %v, want 2 and 3", deref(row.StampDelayP50Ms), deref(row.StampDelayP99Ms))
	}
}

// TestFillCellRankedPastMaxHeldIsSorting: a kernel-stamped cell of more
// chunk gaps and stamp delays than stats.MaxHeld (17,000 requests of 64
// gaps) gets the itl summary and bounds, the per-token itl and the stamp
// delays' p50 and p99 that sorting each whole family gives, exactly, and
// its rows are read a few times in all: once for everything, then a
// couple of times to narrow the three per-token families together
// (they were 15 readings, one family after the other).
func TestFillCellRankedPastMaxHeldIsSorting(t *testing.T) {
	if testing.Short() {
		t.Skip("1.09 million gaps")
	}
	const n, gapsEach = 17000, 64
	reqs := make([]results.Request, n)
	var gaps, perTok, delays []float64
	for i := range reqs {
		g := make([]float64, gapsEach)
		tokens := make([]int64, gapsEach+1)
		tokens[0] = 1
		for k := range g {
			g[k] = float64(1 + (i*7+k*13)%97) // 1..97 ms
			tokens[k+1] = int64(1 + (i+k)%3)
			gaps, perTok = append(gaps, g[k]), append(perTok, g[k]/float64(tokens[k+1]))
		}
		reqs[i] = okReq(time.Duration(i)*time.Millisecond, 0, 5, 5+float64(gapsEach)*50, g, tokens)
		reqs[i].StampDelaysMs = make([]float64, gapsEach+1)
		for k := range reqs[i].StampDelaysMs {
			reqs[i].StampDelaysMs[k] = 0.001 * float64((i+k*5)%1000)
			delays = append(delays, reqs[i].StampDelaysMs[k])
		}
	}
	if len(gaps) <= stats.MaxHeld {
		t.Fatalf("%d gaps: not past stats.MaxHeld (%d)", len(gaps), stats.MaxHeld)
	}
	reads := 0
	row := results.Cell{StampSource: "kernel"}
	FillCell(&row, countingRequests{RequestSlice: results.RequestSlice(reqs), reads: &reads}, CellWindow{Span: 17 * time.Second}, SLO{})

	itl, itlTok := stats.SummarizeInPlace(gaps), stats.SummarizeInPlace(perTok)
	slices.Sort(delays)
	for _, c := range []struct {
		name string
		got  *float64
		want float64
	}{
		{"itl", row.ITLMs, itl.Mean}, {"itl_p50", row.ITLP50Ms, itl.P50}, {"itl_p99", row.ITLP99Ms, itl.P99}, {"itl_max", row.ITLMaxMs, itl.Max},
		{"itl_tok", row.ITLTokMs, itlTok.Mean}, {"itl_tok_p50", row.ITLTokP50Ms, itlTok.P50}, {"itl_tok_p99", row.ITLTokP99Ms, itlTok.P99},
		{"stamp_delay_p50", row.StampDelayP50Ms, stats.SortedPercentile(delays, 50)}, {"stamp_delay_p99", row.StampDelayP99Ms, stats.SortedPercentile(delays, 99)},
	} {
		if c.got == nil || *c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, deref(c.got), c.want)
		}
	}
	for _, c := range results.BoundedColumns() {
		if c.Sample != "itl" {
			continue
		}
		want := stats.SortedQuantileBound(gaps, c.Quantile*100, results.BoundConf)
		l, h, _ := results.BoundsOf(c.Name)
		lo, hi := l.Field(&row).Interface().(*float64), h.Field(&row).Interface().(*float64)
		if lo == nil || hi == nil || *lo != want.Lo || *hi != want.Hi {
			t.Errorf("%s bounds %v..%v, want %v..%v", c.Name, deref(lo), deref(hi), want.Lo, want.Hi)
		}
	}
	if row.ITLSamples == nil || *row.ITLSamples != int64(len(gaps)) {
		t.Errorf("itl_samples %v, want %d", row.ITLSamples, len(gaps))
	}
	if reads > 4 {
		t.Errorf("the rows read %d times, want at most 4", reads)
	}
	t.Logf("the rows read %d times", reads)
}

func TestSLOMet(t *testing.T) {
	for _, c := range []struct {
		slo                   SLO
		ttft, tpot, gap, e2el float64
		want                  bool
	}{
		{SLO{}, 1e9, 1e9, 1e9, 1e9, true},
		{SLO{TTFTMs: 10}, 10, 0, 0, 0, true},
		{SLO{TTFTMs: 10}, 10.1, 0, 0, 0, false},
		{SLO{TPOTMs: 5}, 0, 6, 0, 0, false},
		{SLO{ITLMs: 50}, 0, 1, 51, 0, false}, // the longest gap, not the mean
		{SLO{E2ELMs: 100, TTFTMs: 10}, 5, 0, 0, 100, true},
	} {
		if got := c.slo.Met(c.ttft, c.tpot, c.gap, c.e2el); got != c.want {
			t.Errorf("%+v.Met(%v, %v, %v, %v) = %v", c.slo, c.ttft, c.tpot, c.gap, c.e2el, got)
		}
	}
}

func TestWindows(t *testing.T) {
	reqs := []results.Request{okReq(2*time.Second, 0, 1, 500, nil, nil), okReq(0, 0, 1, 100, nil, nil), failedReq(3*time.Second, 0, "x")}
	if n, span := SendsOf(results.AsRequests(reqs)); n != 2 || span != 3*time.Second {
		t.Errorf("SendsOf: %d over %v", n, span)
	}
	// Earliest send (0) to the latest finish (2 s + 500 ms); a failed
	// request sent later has no finish.
	if w := UnionWindow(results.AsRequests(reqs)); w != 2500*time.Millisecond {
		t.Errorf("UnionWindow %v", w)
	}
	if n, span := SendsOf(results.AsRequests(reqs[:1])); n != 0 || span != 0 {
		t.Errorf("one request: %d over %v", n, span)
	}
}
