package runview

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/chart"
	"github.com/benchrun/benchrun/internal/results"
)

// titles are a chart's tooltips: the data points as people read them.
func titles(svg string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<title>([^<]*)</title>`).FindAllStringSubmatch(svg, -1) {
		out = append(out, strings.ReplaceAll(m[1], "&#39;", "'"))
	}
	return out
}

func hasTitle(t *testing.T, svg string, want ...string) {
	t.Helper()
	got := titles(svg)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("no point %q among %q", w, got)
		}
	}
}

var t0 = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

func TestTimelineOfKeepsAnEvenSampleInSendOrder(t *testing.T) {
	var reqs []results.Request
	for i := range 1000 {
		r := results.Request{Seq: int64(i), SentAt: t0.Add(time.Duration(i) * 10 * time.Millisecond), SendLagMs: 2, Status: results.StatusOK,
			TTFTMs: results.Some(5.0), E2ELMs: results.Some(20.0)}
		if i%100 == 7 {
			r.Status, r.Error, r.TTFTMs, r.E2ELMs = results.StatusError, "HTTP 500", nil, nil
		}
		reqs = append(reqs, r)
	}
	slices.Reverse(reqs) // rows may come in any order: the timeline is in send order
	rows := TimelineOf(results.AsRequests(reqs))
	if len(rows) != TimelineRows {
		t.Fatalf("%d rows, want %d", len(rows), TimelineRows)
	}
	// Row k is request floor(k×1000/400) = 2.5k: sent at 25k ms after the
	// first, scheduled 2 ms before; the first scheduled send is 0.
	for k, r := range rows {
		seq := k * 1000 / TimelineRows
		sent := float64(seq)*0.010 + 0.002
		if math.Abs(r.Sent-sent) > 1e-9 || math.Abs(r.Scheduled-(sent-0.002)) > 1e-9 {
			t.Fatalf("row %d: sent %g scheduled %g, want request %d's %g", k, r.Sent, r.Scheduled, seq, sent)
		}
		if failed := seq%100 == 7; failed != r.Failed || failed != math.IsNaN(r.Done) {
			t.Fatalf("row %d (request %d): failed %v done %v", k, seq, r.Failed, r.Done)
		}
		if !r.Failed && (math.Abs(r.FirstToken-(sent+0.005)) > 1e-9 || math.Abs(r.Done-(sent+0.020)) > 1e-9) {
			t.Fatalf("row %d: first token %g done %g", k, r.FirstToken, r.Done)
		}
	}
}

// TestTimelineDrawsEachPhase: a late request has a bar for its wait to be
// sent, an answered one a bar for its wait and one for its stream, a
// failed one a red bar; each request is one group with its tooltip.
func TestTimelineDrawsEachPhase(t *testing.T) {
	nan := math.NaN()
	tl := &chart.Timeline{Title: "t", Rows: []chart.TimelineRow{
		{Scheduled: 0, Sent: 0.5, FirstToken: 1, Done: 2, Tip: "late"},
		{Scheduled: 1, Sent: 1, FirstToken: 1.5, Done: 3, Tip: "on time"},
		{Scheduled: 2, Sent: 2, FirstToken: nan, Done: nan, Failed: true, Tip: "failed"},
	}}
	svg := tl.SVG()
	if n := strings.Count(svg, `<g class="request">`); n != 3 {
		t.Errorf("%d request groups, want 3", n)
	}
	hasTitle(t, svg, "late", "on time", "failed")
	// Each phase's colour: once in the legend, then per bar.
	for color, want := range map[string]int{"#bab0ac": 1 + 1, "#f28e2b": 1 + 2, "#4e79a7": 1 + 2, "#c81e1e": 1 + 1} {
		if n := strings.Count(svg, `fill="`+color+`"`); n != want {
			t.Errorf("%d rects of %s, want %d", n, color, want)
		}
	}
	// The x axis spans 0..3 s over the plot (64..740 px): the late
	// request's wait runs from 0 to 0.5 s.
	m := regexp.MustCompile(`<rect x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)" height="[0-9.]+" fill="#bab0ac"/>`).FindStringSubmatch(svg[strings.Index(svg, `<g class="request">`):])
	if m == nil || m[1] != "64.0" || m[2] != "112.7" {
		t.Errorf("the late request's wait bar: %v, want x 64.0 width 112.7 (0.5 of 3 s over 676 px)", m)
	}
}

func TestRateChartsDrawOfferedAgainstAchieved(t *testing.T) {
	cells := []results.Cell{
		{Stage: "sweep", CellID: "a", ISL: 64, OSL: 32, Rate: 10, SentReqS: results.Some(9.5), ReqS: results.Some(9.0), Status: results.StatusOK},
		{Stage: "sweep", CellID: "b", ISL: 64, OSL: 32, Rate: 20, SentReqS: results.Some(19.0), ReqS: results.Some(12.0), Status: results.StatusError},
		{Stage: "sweep", CellID: "c", ISL: 64, OSL: 32, Concurrency: 4, ReqS: results.Some(50.0), Status: results.StatusOK},
	}
	charts := RateCharts(cells)
	if len(charts) != 1 || charts[0].Name != "rate-sweep-64-32" {
		t.Fatalf("charts %+v", charts)
	}
	hasTitle(t, charts[0].SVG, "offered 10 req/s", "offered 20 req/s", "10 req/s: sent 9.5 req/s (95.0% of offered)",
		"20 req/s: completed 12 req/s (60.0% of offered)")
	if strings.Contains(charts[0].SVG, "c=4") {
		t.Error("a closed-loop cell on the rate chart")
	}
}

func TestBandChartsDrawTheHistorysInterval(t *testing.T) {
	cells := []results.Cell{
		{Stage: "sweep", CellID: "c1", ISL: 64, OSL: 32, Concurrency: 1},
		{Stage: "sweep", CellID: "c4", ISL: 64, OSL: 32, Concurrency: 4},
	}
	reg := func(cell, outcome, old, cur, lo, hi string) results.Verdict {
		return results.Verdict{CellID: cell, Level: "regression", Name: "itl_p99_ms", Outcome: outcome,
			Values: map[string]string{"old": old, "new": cur, "low": lo, "high": hi, "runs": "r1,r2"}}
	}
	verdicts := []results.Verdict{
		reg("c1", "same", "10", "10.5", "9", "12"),
		reg("c4", "regressed", "20", "30", "18", "24"),
		{CellID: "c1", Level: "row", Name: "itl_p99_ms", Values: map[string]string{"old": "1", "new": "1", "low": "1", "high": "1"}},
		reg("c4", "insufficient data", "null", "30", "null", "null"),
	}
	charts := BandCharts(cells, verdicts)
	if len(charts) != 1 || charts[0].Name != "baseline-itl-p99-ms-sweep-64-32" {
		t.Fatalf("charts %+v", charts)
	}
	svg := charts[0].SVG
	hasTitle(t, svg, "c=1: expected 9–12", "c=4: expected 18–24", "c=1: history 10 (runs r1,r2)", "c=4: this run 30, regressed",
		"c=4: itl_p99_ms regressed: 30, expected 18–24")
	if n := strings.Count(svg, `class="band"`); n != 1 {
		t.Errorf("%d bands, want 1", n)
	}
	if n := strings.Count(svg, `class="mark"`); n != 1 {
		t.Errorf("%d regressed marks, want 1", n)
	}
}

func TestSliceChartsAreTheSlices(t *testing.T) {
	cells := []results.Cell{{Stage: "sweep", CellID: "c1", ISL: 64, OSL: 32, Concurrency: 1}, {Stage: "sweep", CellID: "c2", ISL: 64, OSL: 32, Concurrency: 2}}
	ss := map[string][]results.Slice{
		"c1": {{StartS: 0, WidthS: 1, OutputTokS: 100, InFlight: 1, ITLP99Ms: results.Some(5.0)}, {StartS: 1, WidthS: 1, OutputTokS: 80, InFlight: 1, ITLP99Ms: results.Some(250.0)}},
		"c2": {{StartS: 0, WidthS: 0.5, OutputTokS: 190, InFlight: 2}},
	}
	charts := SliceCharts(cells, ss)
	if len(charts) != 2 || charts[0].Name != "slices-tput-sweep-64-32" || charts[1].Name != "slices-latency-sweep-64-32" {
		t.Fatalf("charts %v", charts)
	}
	hasTitle(t, charts[0].SVG, "c=1, 0–1 s: 100 tok/s, 1 in flight", "c=1, 1–2 s: 80 tok/s, 1 in flight", "c=2, 0–0.5 s: 190 tok/s, 2 in flight")
	hasTitle(t, charts[1].SVG, "c=1, 1–2 s: 250 ms")
}
