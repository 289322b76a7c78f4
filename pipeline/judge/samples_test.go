package judge

import (
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/schema"
)

// cellOf is a sweep row filled the way the sweep fills it, from requests
// whose TTFTs are ttfts (e2el 10 ms later, two gaps of 5 ms each).
func cellOf(ttfts []float64) results.Cell {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	reqs := make([]results.Request, len(ttfts))
	for i, x := range ttfts {
		reqs[i] = results.Request{SentAt: t0.Add(time.Duration(i) * time.Millisecond), TTFTMs: results.Some(x), E2ELMs: results.Some(x + 10),
			InputTokens: 10, OutputTokens: 3, Chunks: 3, ChunkGapsMs: []float64{5, 5}, ChunkTokens: []int64{1, 1, 1}, Status: results.StatusOK}
	}
	c := results.Cell{Stage: "sweep", CellID: "c1", ISL: 64, OSL: 3, Concurrency: 4, Measurement: 1}
	measure.FillCell(&c, results.AsRequests(reqs), measure.CellWindow{Span: time.Second}, measure.SLO{})
	return c
}

func spread(n int, from, to float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = from + (to-from)*float64(i)/float64(max(n-1, 1))
	}
	return out
}

// TestTooFewSamplesInconclusive: a check on a percentile is decided only
// where the percentile's 95 % bounds lie on one side of it. A p99 of 8
// requests (their largest) is not bounded from above, so `ttft_p99_ms <
// 500` is inconclusive and says it needs at least 368 requests, whatever
// the eight said, and the cell is not measured again for it (the same
// eight would not decide it); 400 requests decide it. A median of 8
// between 10 and 80 ms straddles 60 and needs more; the same median
// between 10 and 40 is decided.
func TestTooFewSamplesInconclusive(t *testing.T) {
	tests := []struct {
		expr     string
		row      results.Cell
		pass     bool
		inconcl  bool
		needs    string // in Explained
		minNeeds int64
	}{
		{"ttft_p99_ms < 500", cellOf(spread(8, 30, 40)), false, true, "needs at least 368 requests", 368},
		{"ttft_p99_ms > 500", cellOf(spread(8, 30, 40)), false, true, "needs at least 368 requests", 368},
		{"ttft_p99_ms < 500", cellOf(spread(400, 30, 40)), true, false, "", 0},
		{"ttft_p50_ms < 60", cellOf(spread(8, 10, 80)), false, true, "ttft_p50_ms 45 has 95 % bounds [10, 80] from 8 samples", 9},
		{"ttft_p50_ms < 60", cellOf(spread(8, 10, 40)), true, false, "", 0},
		{"ttft_p50_ms < 60", cellOf(spread(400, 10, 80)), true, false, "", 0},
		// itl p99 over 8 requests' 16 gaps: 368 gaps need 184 requests.
		{"itl_p99_ms < 4*itl_p50_ms", cellOf(spread(8, 30, 40)), false, true, "needs at least 184 requests", 184},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			a, err := CompileAssertion(schema.Assertion{Expr: tt.expr, Pos: schema.Pos{File: "p.cue", Line: 1, Col: 1}}, "sweep")
			if err != nil {
				t.Fatal(err)
			}
			v := a.Judge(tt.row)
			if v.Passed != tt.pass || v.Inconclusive != tt.inconcl || v.TooFewSamples != tt.inconcl || v.Error != "" {
				t.Fatalf("passed=%v inconclusive=%v too few=%v error=%q explained=%q; want passed=%v inconclusive=%v", v.Passed, v.Inconclusive, v.TooFewSamples, v.Error, v.Explained, tt.pass, tt.inconcl)
			}
			t.Log(v.Explained)
			if !strings.Contains(v.Explained, tt.needs) || v.NeedsRequests < tt.minNeeds {
				t.Errorf("explained %q (needs %d); want it to say %q and need at least %d", v.Explained, v.NeedsRequests, tt.needs, tt.minNeeds)
			}
		})
	}

	// The judge does not ask for a cell measured again when only its
	// sample was too small.
	a, _ := CompileAssertion(schema.Assertion{Expr: "ttft_p99_ms < 500", Pos: schema.Pos{File: "p.cue", Line: 1, Col: 1}}, "sweep")
	j := New(Config{Asserts: map[string][]*Assertion{"sweep": {a}}})
	c := cellOf(spread(8, 30, 40))
	rows := j.Row(c, nil)
	if len(rows) != 1 || rows[0].Outcome != results.OutcomeInconclusive {
		t.Fatalf("verdict rows %+v, want one inconclusive", rows)
	}
	if j.Confirm(c) {
		t.Errorf("a cell with too few samples is measured again")
	}
}
