package measure

import "github.com/benchrun/benchrun/internal/results"

// What one request contributes to its cell's per-request distributions,
// written once: the cell's columns (FillCell), its time slices (Slices),
// the report's distributions and result.json's deviations
// (sinks/internal) and the regression bootstrap (internal/regress) all
// read a request through these two functions, so that a request the
// cell counts as completed is the one every reader takes samples from.

// Sample is what one completed request contributes to its cell's
// distributions (docs/METRICS.md): one value each to ttft and e2el and
// to their scheduled views (the actual-send value plus the send lag),
// one to tpot and ntpot where its tokens allow, and every chunk gap to
// itl, each gap also divided among the tokens of the event that ended it
// (itl_tok).
type Sample struct {
	TTFTMs, E2ELMs           float64
	TTFTSchedMs, E2ELSchedMs float64
	// TPOTMs is results.RequestTPOT's: set when HasTPOT (two output
	// tokens or more).
	TPOTMs  float64
	HasTPOT bool
	// NTPOTMs is e2el over every output token: set when HasNTPOT (one
	// output token or more).
	NTPOTMs  float64
	HasNTPOT bool
	// GapsMs is the request's chunk gaps (its row's slice, not a copy).
	GapsMs []float64
	// MaxGapMs is the longest gap (0 without gaps): the stall a reader
	// saw, which the itl objective bounds.
	MaxGapMs float64
	tokens   []int64 // the row's chunk_tokens
}

// SampleOf is request r's sample; false when r did not complete (it
// failed, or its first token or its end was not timed): such a request is
// counted by the cell, never mixed into a latency.
func SampleOf(r *results.Request) (Sample, bool) {
	if r.Status != results.StatusOK || r.TTFTMs == nil || r.E2ELMs == nil {
		return Sample{}, false
	}
	t, e := *r.TTFTMs, *r.E2ELMs
	s := Sample{
		TTFTMs: t, E2ELMs: e,
		TTFTSchedMs: t + r.SendLagMs, E2ELSchedMs: e + r.SendLagMs,
		GapsMs: r.ChunkGapsMs, tokens: r.ChunkTokens,
	}
	s.TPOTMs, s.HasTPOT = results.RequestTPOT(t, e, r.OutputTokens)
	if r.OutputTokens > 0 {
		s.NTPOTMs, s.HasNTPOT = e/float64(r.OutputTokens), true
	}
	for _, g := range r.ChunkGapsMs {
		s.MaxGapMs = max(s.MaxGapMs, g)
	}
	return s, true
}

// GapTokens is the tokens the event ending gap k carried (chunk_tokens;
// at least 1, and 1 without them): gap k ends at event k+1, and the
// tokens that event carried share it.
func (s Sample) GapTokens(k int) int64 {
	if k+1 < len(s.tokens) {
		return max(s.tokens[k+1], 1)
	}
	return 1
}

// AppendFamily appends the values request r gives to one sample family
// (ttft, e2el, ttft_sched, e2el_sched, tpot, itl, ttfo) as its row stores them,
// for a reader that pools one family at a time over stored rows (the
// regression bootstrap). It reads each value that was measured, so an ok
// request whose runner timed only its end (llama-bench) still gives e2el;
// the scheduled views are the row's own columns (NULL in rows older than
// them); r's status is the caller's to check.
func AppendFamily(dst []float64, r *results.Request, family string) []float64 {
	switch family {
	case "ttft":
		dst = appendSet(dst, r.TTFTMs)
	case "e2el":
		dst = appendSet(dst, r.E2ELMs)
	case "ttft_sched":
		dst = appendSet(dst, r.TTFTSchedMs)
	case "e2el_sched":
		dst = appendSet(dst, r.E2ELSchedMs)
	case "tpot":
		if r.TTFTMs == nil || r.E2ELMs == nil {
			break
		}
		if v, ok := results.RequestTPOT(*r.TTFTMs, *r.E2ELMs, r.OutputTokens); ok {
			dst = append(dst, v)
		}
	case "itl":
		dst = append(dst, r.ChunkGapsMs...)
	case "ttfo":
		dst = appendSet(dst, r.TTFOMs)
	}
	return dst
}

func appendSet(dst []float64, v *float64) []float64 {
	if v != nil {
		dst = append(dst, *v)
	}
	return dst
}
