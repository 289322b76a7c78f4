package measure

import (
	"iter"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

func TestNiceWidth(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{0, time.Millisecond},
		{900 * time.Microsecond, time.Millisecond},
		{1100 * time.Microsecond, 2 * time.Millisecond},
		{3 * time.Millisecond, 5 * time.Millisecond},
		{70 * time.Millisecond, 100 * time.Millisecond},
		{time.Second, time.Second},
		{1001 * time.Millisecond, 2 * time.Second},
		{4 * time.Second, 5 * time.Second},
		{6 * time.Second, 10 * time.Second},
	} {
		if got := niceWidth(tc.in); got != tc.want {
			t.Errorf("niceWidth(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestSliceWidth(t *testing.T) {
	// A pass of 10 s: scheduled at t0 (sent 5 ms late), the last request
	// ends at 10 s.
	reqs := []results.Request{
		okReq(5*time.Millisecond, 5, 10, 100, nil, nil),
		okReq(9900*time.Millisecond, 0, 10, 100, nil, nil),
	}
	for _, tc := range []struct {
		name       string
		want, got  time.Duration
		wantWindow time.Duration
	}{
		{"auto: about ten windows", 0, 0, time.Second},
		{"the plan's width", 250 * time.Millisecond, 0, 250 * time.Millisecond},
		{"too narrow for 1000 windows: widened", time.Millisecond, 0, 20 * time.Millisecond},
	} {
		if got := SliceWidth(results.AsRequests(reqs), tc.want); got != tc.wantWindow {
			t.Errorf("%s: SliceWidth = %v, want %v", tc.name, got, tc.wantWindow)
		}
	}
	if got := SliceWidth(nil, time.Second); got != 0 {
		t.Errorf("no requests: SliceWidth = %v, want 0", got)
	}
}

// TestSlicesCountEachEventWhereItHappened builds a pass whose every event
// time is known and checks each window's counts, rates and latencies.
func TestSlicesCountEachEventWhereItHappened(t *testing.T) {
	cell := results.Cell{RunID: "r", Stage: "s", CellID: "c", Attempt: 2, Measurement: 1, SliceS: 1}
	reqs := []results.Request{
		// Scheduled at 0, sent at 0: first token at 0.5 s, gaps ending at
		// 0.9 s and 1.2 s (4 tokens: 1+1+2), done at 1.2 s.
		okReq(0, 0, 500, 1200, []float64{400, 300}, []int64{1, 1, 2}),
		// Sent at 1.5 s (scheduled 1.49 s): first token at 2.0 s, done at
		// 2.5 s after one gap of 500 ms; 2 tokens.
		okReq(1500*time.Millisecond, 10, 500, 1000, []float64{500}, nil),
		// Failed, sent at 2.2 s: counts in window 2 where it was sent.
		failedReq(2200*time.Millisecond, 30, "boom"),
	}
	got := Slices(cell, results.AsRequests(reqs))
	if len(got) != 3 {
		t.Fatalf("%d slices, want 3 (the pass spans 0..2.5 s in 1 s windows): %+v", len(got), got)
	}
	type want struct {
		sent, completed, failed int64
		width, tokS, inFlight   float64
		ttft50, itl99, e2el50   float64 // NaN: none
	}
	nan := math.NaN()
	wants := []want{
		// Window 0 [0,1): req 0 sent, first token (1 tok) at 0.5, gap 400 ends 0.9 (1 tok).
		// In flight: req 0 the whole second.
		{1, 0, 0, 1, 2, 1, 500, 400, nan},
		// Window 1 [1,2): req 0's gap 300 ends 1.2 (2 tok), done 1.2; req 1 sent 1.5,
		// its first token at 2.0 falls in window 2. In flight: 0.2 s + 0.5 s.
		{1, 1, 0, 1, 2, 0.7, nan, 300, 1200},
		// Window 2 [2,2.5): req 1's first token at 2.0 (1 tok), gap 500 ends 2.5 (1 tok), done 2.5;
		// the failed request sent at 2.2. In flight: req 1 for 0.5 s of a 0.5 s window.
		{1, 1, 1, 0.5, 4, 1, 500, 500, 1000},
	}
	for i, w := range wants {
		s := got[i]
		if s.Slice != int64(i) || s.RunID != "r" || s.CellID != "c" || s.Attempt != 2 || s.Measurement != 1 {
			t.Errorf("slice %d: identity %+v", i, s)
		}
		if s.Sent != w.sent || s.Completed != w.completed || s.Failed != w.failed {
			t.Errorf("slice %d: sent/completed/failed %d/%d/%d, want %d/%d/%d", i, s.Sent, s.Completed, s.Failed, w.sent, w.completed, w.failed)
		}
		if math.Abs(s.WidthS-w.width) > 1e-9 || math.Abs(s.OutputTokS-w.tokS) > 1e-9 || math.Abs(s.InFlight-w.inFlight) > 1e-9 {
			t.Errorf("slice %d: width %g tok/s %g in flight %g, want %g %g %g", i, s.WidthS, s.OutputTokS, s.InFlight, w.width, w.tokS, w.inFlight)
		}
		for _, m := range []struct {
			name string
			got  *float64
			want float64
		}{{"ttft_p50", s.TTFTP50Ms, w.ttft50}, {"itl_p99", s.ITLP99Ms, w.itl99}, {"e2el_p50", s.E2ELP50Ms, w.e2el50}} {
			if math.IsNaN(m.want) != (m.got == nil) || m.got != nil && math.Abs(*m.got-m.want) > 1e-9 {
				t.Errorf("slice %d: %s = %v, want %g", i, m.name, fmtPtr(m.got), m.want)
			}
		}
	}
	if got[0].StartS != 0 || math.Abs(got[2].StartS-2) > 1e-9 || !got[1].StartedAt.Equal(t0.Add(time.Second)) {
		t.Errorf("window starts: %g, %g, %v", got[0].StartS, got[2].StartS, got[1].StartedAt)
	}
	if got[2].SendLagP99Ms == nil || *got[2].SendLagP99Ms != 30 {
		t.Errorf("window 2's send lag p99 = %v, want the failed request's 30 ms", fmtPtr(got[2].SendLagP99Ms))
	}
}

// TestSlicesAddUpToTheCell: whatever the width, the windows' sends,
// completions and tokens add up to the cell's (FillCell over the same
// requests), so a slice is a part of the cell, not another measurement.
func TestSlicesAddUpToTheCell(t *testing.T) {
	var reqs []results.Request
	for i := range 200 {
		gaps := make([]float64, 1+i%7)
		for k := range gaps {
			gaps[k] = float64(3 + (i*k)%11)
		}
		tokens := make([]int64, len(gaps)+1)
		for k := range tokens {
			tokens[k] = int64(1 + (i+k)%3)
		}
		reqs = append(reqs, okReq(time.Duration(i)*37*time.Millisecond, float64(i%5), float64(20+i%13), 200, gaps, tokens))
		if i%17 == 0 {
			reqs = append(reqs, failedReq(time.Duration(i)*37*time.Millisecond, 1, "x"))
		}
	}
	for _, slice := range []time.Duration{0, time.Millisecond, 100 * time.Millisecond, time.Second, time.Hour} {
		var cell results.Cell
		FillCell(&cell, results.AsRequests(reqs), CellWindow{Span: UnionWindow(results.AsRequests(reqs)), Slice: slice}, SLO{})
		ss := Slices(cell, results.AsRequests(reqs))
		if len(ss) == 0 || len(ss) > MaxSlices {
			t.Fatalf("slice %v: %d windows", slice, len(ss))
		}
		var sent, completed, failed int64
		var tokens float64
		for _, s := range ss {
			sent, completed, failed = sent+s.Sent, completed+s.Completed, failed+s.Failed
			tokens += s.OutputTokS * s.WidthS
			if math.Abs(s.WidthS-cell.SliceS) > 1e-9 && s.Slice != int64(len(ss)-1) {
				t.Errorf("slice %v: window %d is %g s wide, the cell says %g", slice, s.Slice, s.WidthS, cell.SliceS)
			}
		}
		var outTok float64
		for _, r := range reqs {
			if r.Status == results.StatusOK {
				outTok += float64(r.OutputTokens)
			}
		}
		if sent != cell.Requests || completed != cell.Completed || failed != cell.Failed || math.Abs(tokens-outTok) > 1e-6 {
			t.Errorf("slice %v (%d windows of %g s): sent %d completed %d failed %d tokens %g; cell %d %d %d, tokens %g",
				slice, len(ss), cell.SliceS, sent, completed, failed, tokens, cell.Requests, cell.Completed, cell.Failed, outTok)
		}
	}
}

func fmtPtr(p *float64) any {
	if p == nil {
		return "NULL"
	}
	return *p
}

// TestSlicesRankedPastMaxHeldAreSorting: a cell of more chunk gaps than
// stats.MaxHeld (17,000 requests of 64 gaps: 1.09 million) ranks every
// window's gaps in the same readings, and each window's itl p50, p99
// and max are what sorting the gaps whose tokens ended in it gives,
// exactly; the rows are read a bounded number of times in all, not a
// few times a window.
func TestSlicesRankedPastMaxHeldAreSorting(t *testing.T) {
	if testing.Short() {
		t.Skip("1.09 million gaps")
	}
	const n, gapsEach = 17000, 64
	reqs := make([]results.Request, n)
	for i := range reqs {
		gaps := make([]float64, gapsEach)
		for k := range gaps {
			gaps[k] = float64(1 + (i*7+k*13)%97) // 1..97 ms
		}
		reqs[i] = okReq(time.Duration(i)*time.Millisecond, 0, 5, 5+float64(gapsEach)*50, gaps, nil)
	}
	if n*gapsEach <= stats.MaxHeld {
		t.Fatalf("%d gaps: not past stats.MaxHeld (%d)", n*gapsEach, stats.MaxHeld)
	}
	cell := results.Cell{CellID: "c", SliceS: 10}
	reads := 0
	rows := countingRequests{RequestSlice: results.RequestSlice(reqs), reads: &reads}
	got := Slices(cell, rows)
	// Each window's gaps, by where their token ended, as Slices places them.
	start := reqs[0].SentAt
	byWindow := map[int][]float64{}
	for _, r := range reqs {
		tok := r.SentAt.Add(msDuration(*r.TTFTMs))
		for _, g := range r.ChunkGapsMs {
			tok = tok.Add(msDuration(g))
			w := min(int(tok.Sub(start)/(10*time.Second)), len(got)-1)
			byWindow[w] = append(byWindow[w], g)
		}
	}
	for i, s := range got {
		gaps := byWindow[i]
		if len(gaps) == 0 {
			continue
		}
		slices.Sort(gaps)
		if s.ITLP50Ms == nil || *s.ITLP50Ms != stats.SortedPercentile(gaps, 50) || *s.ITLP99Ms != stats.SortedPercentile(gaps, 99) || *s.ITLMaxMs != gaps[len(gaps)-1] {
			t.Errorf("window %d (%d gaps): itl p50 %v p99 %v max %v, want %v %v %v", i, len(gaps), deref(s.ITLP50Ms), deref(s.ITLP99Ms), deref(s.ITLMaxMs),
				stats.SortedPercentile(gaps, 50), stats.SortedPercentile(gaps, 99), gaps[len(gaps)-1])
		}
	}
	if len(got) < 3 || reads > 12 {
		t.Errorf("%d windows, the rows read %d times", len(got), reads)
	}
	t.Logf("%d windows, the rows read %d times", len(got), reads)
}

// countingRequests counts the readings of its rows.
type countingRequests struct {
	results.RequestSlice
	reads *int
}

func (c countingRequests) All() iter.Seq[*results.Request] {
	*c.reads++
	return c.RequestSlice.All()
}

// Slices of memoized rows (results.Memoize, as the engine hands a cell's
// rows to its sinks) are cut once per cell row: a second consumer gets
// the same windows without reading the rows, its own copy of the list,
// and another width or another row is cut afresh.
func TestSlicesCutOnceForMemoizedRows(t *testing.T) {
	var reqs []results.Request
	for i := range 200 {
		reqs = append(reqs, okReq(time.Duration(i)*10*time.Millisecond, 0, 5, 25, []float64{10, 10}, nil))
	}
	reads := 0
	rows := results.Memoize(countingRequests{RequestSlice: results.RequestSlice(reqs), reads: &reads})
	cell := results.Cell{RunID: "r", CellID: "c", SliceS: 0.5}
	first := Slices(cell, rows)
	once := reads
	second := Slices(cell, rows)
	if reads != once || len(first) == 0 || !reflect.DeepEqual(first, second) {
		t.Fatalf("second cut: %d more readings, %d and %d windows", reads-once, len(first), len(second))
	}
	second[0].Sent = -1
	if first[0].Sent == -1 {
		t.Errorf("the consumers share one list: one's change is the other's")
	}
	if want := Slices(cell, countingRequests{RequestSlice: results.RequestSlice(reqs), reads: new(int)}); !reflect.DeepEqual(first, want) {
		t.Errorf("memoized slices differ from the rows' own")
	}
	wider := cell
	wider.SliceS = 1
	if got := Slices(wider, rows); reads == once || len(got) >= len(first) {
		t.Errorf("another width: %d windows (%d at 0.5 s), %d more readings", len(got), len(first), reads-once)
	}
}
