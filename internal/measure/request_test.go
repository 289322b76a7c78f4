package measure

import (
	"slices"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

// A completed request gives every family its values; a failed one or an
// ok one without a timed first token gives SampleOf nothing, while
// AppendFamily still reads what the row measured.
func TestSampleOf(t *testing.T) {
	ok := results.Request{
		Status: results.StatusOK, TTFTMs: results.Some(10.0), E2ELMs: results.Some(40.0), SendLagMs: 2,
		OutputTokens: 4, ChunkGapsMs: []float64{5, 20, 5}, ChunkTokens: []int64{1, 2, 0, 1},
	}
	s, got := SampleOf(&ok)
	if !got {
		t.Fatal("an ok request with ttft and e2el did not complete")
	}
	if s.TTFTMs != 10 || s.E2ELMs != 40 || s.TTFTSchedMs != 12 || s.E2ELSchedMs != 42 {
		t.Errorf("latencies %+v", s)
	}
	if !s.HasTPOT || s.TPOTMs != 10 || !s.HasNTPOT || s.NTPOTMs != 10 || s.MaxGapMs != 20 {
		t.Errorf("tpot %v/%v, ntpot %v/%v, max gap %v", s.TPOTMs, s.HasTPOT, s.NTPOTMs, s.HasNTPOT, s.MaxGapMs)
	}
	// Gap k ends at event k+1; an event of no tokens, or past the
	// recorded ones, counts as one.
	if got := []int64{s.GapTokens(0), s.GapTokens(1), s.GapTokens(2), s.GapTokens(3)}; !slices.Equal(got, []int64{2, 1, 1, 1}) {
		t.Errorf("gap tokens %v", got)
	}

	one := ok
	one.OutputTokens = 1
	if s, _ := SampleOf(&one); s.HasTPOT || !s.HasNTPOT {
		t.Errorf("one output token: tpot %v, ntpot %v", s.HasTPOT, s.HasNTPOT)
	}
	failed := ok
	failed.Status = results.StatusError
	endOnly := results.Request{Status: results.StatusOK, E2ELMs: results.Some(7.0), OutputTokens: 3}
	for _, r := range []results.Request{failed, endOnly} {
		if _, got := SampleOf(&r); got {
			t.Errorf("%+v completed", r)
		}
	}
	if got := AppendFamily(nil, &endOnly, "e2el"); !slices.Equal(got, []float64{7}) {
		t.Errorf("e2el of an end-only row: %v", got)
	}
	if got := AppendFamily(nil, &endOnly, "tpot"); got != nil {
		t.Errorf("tpot of an end-only row: %v", got)
	}
	ok.TTFTSchedMs = results.Some(12.5)
	for fam, want := range map[string][]float64{
		"ttft": {10}, "e2el": {40}, "ttft_sched": {12.5}, "e2el_sched": nil, "tpot": {10}, "itl": {5, 20, 5}, "nope": nil,
	} {
		if got := AppendFamily(nil, &ok, fam); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", fam, got, want)
		}
	}
}
