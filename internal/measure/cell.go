package measure

import (
	"fmt"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// SLO is the plan's per-request objectives as plain values, in
// milliseconds; 0 leaves an objective unset. A plan's schema.SLO converts
// to it (measure.SLO(plan.SLO)): measuring never reads the plan. Its JSON
// names are plan.json's "slo", which a merge of shards reads back.
type SLO struct {
	TTFTMs float64 `json:"ttft_ms"`
	TPOTMs float64 `json:"tpot_ms"`
	ITLMs  float64 `json:"itl_ms"`
	E2ELMs float64 `json:"e2el_ms"`
}

// Met says every objective set holds for one request. The itl objective
// bounds the request's longest gap: the stall a reader sees.
func (slo SLO) Met(ttft, tpot, maxGap, e2el float64) bool {
	return (slo.TTFTMs == 0 || ttft <= slo.TTFTMs) &&
		(slo.TPOTMs == 0 || tpot <= slo.TPOTMs) &&
		(slo.ITLMs == 0 || maxGap <= slo.ITLMs) &&
		(slo.E2ELMs == 0 || e2el <= slo.E2ELMs)
}

// CellWindow is the time a cell's throughputs divide by and the span its sends
// took. Span 0: no throughput was measured (NULL). SendIntervals over
// SendSpan is the offered rate (sent_req_s); a closed loop's passes add
// their own.
type CellWindow struct {
	Span          time.Duration
	SendIntervals int
	SendSpan      time.Duration
	// Slice is the plan's time-slice width (0: about AutoSlices windows).
	Slice time.Duration
}

// SendsOf is the send span of one pass's requests: first to last send.
func SendsOf(reqs results.Requests) (intervals int, span time.Duration) {
	if reqs == nil || reqs.Len() < 2 {
		return 0, 0
	}
	var first, last time.Time
	for r := range reqs.All() {
		if first.IsZero() || r.SentAt.Before(first) {
			first = r.SentAt
		}
		if last.IsZero() || r.SentAt.After(last) {
			last = r.SentAt
		}
	}
	return reqs.Len() - 1, last.Sub(first)
}

// UnionWindow is the window of requests that several clients sent: the
// earliest send to the latest finish (0 when nothing finished).
func UnionWindow(reqs results.Requests) time.Duration {
	var first, last time.Time
	for r := range reqs.All() {
		if first.IsZero() || r.SentAt.Before(first) {
			first = r.SentAt
		}
		if r.Status != results.StatusOK || r.E2ELMs == nil {
			continue
		}
		if end := r.SentAt.Add(time.Duration(*r.E2ELMs * float64(time.Millisecond))); end.After(last) {
			last = end
		}
	}
	if last.IsZero() || !last.After(first) {
		return 0
	}
	return last.Sub(first)
}

// FillCell computes a cell row's request-derived metrics from its request
// rows: counts, the latency distributions, throughputs over w, goodput
// against slo, the effective lengths, the kernel stamps' delays (when the
// row's stamp_source is kernel) and the status. It is the one definition
// (docs/METRICS.md) that a sweep, a validate stage and a merged sharded
// cell share. Every column it owns is set, to NULL when it was not
// measured: a statistic without samples is nil, never 0, and failed
// requests are counted but never mixed into a latency.
//
// It reads the rows a few times, never holding them (a long cell's are
// read back from its spool, rundir.RequestSpool): once for everything
// but the per-token families, the chunk gaps and the kernel stamps'
// delays, which that same reading starts to rank (stats.RankEach) and
// later readings narrow while they are more than stats.MaxHeld values.
// What it holds is its one-per-request families, 8 bytes a value.
func FillCell(row *results.Cell, reqs results.Requests, w CellWindow, slo SLO) {
	if reqs == nil {
		reqs = results.RequestSlice(nil)
	}
	watched := results.WatchRequests(reqs)
	reqs = watched
	kernel := row.StampSource == "kernel"
	// Each family built once at its largest size, the rows' count:
	// doubling them took twice a long cell's samples at its end.
	n := reqs.Len()
	ttft, ttftSched, e2el, e2elSched := make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	tpot, ntpot, lag := make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	lengths := newLengthReading(n)
	var reasoning reasoningReading
	var tools toolReading
	var span passReading
	var inTok, outTok, ttftSum float64
	var good int64
	firstErr := ""
	row.Requests, row.Completed, row.Failed, row.ConnRetries = int64(n), 0, 0, 0
	// read is the first reading's work on one row: everything but the
	// per-token families.
	read := func(r *results.Request, smp Sample, ok bool) {
		span.add(r)
		row.ConnRetries += r.ConnRetries
		// Send lag is the client's own delay and counts for every request
		// that was sent, failed or not.
		lag = append(lag, r.SendLagMs)
		lengths.add(r)
		if !ok {
			row.Failed++
			if firstErr == "" {
				firstErr = r.Error
			}
			return
		}
		reasoning.add(r)
		tools.add(r)
		row.Completed++
		ttft, e2el = append(ttft, smp.TTFTMs), append(e2el, smp.E2ELMs)
		ttftSched, e2elSched = append(ttftSched, smp.TTFTSchedMs), append(e2elSched, smp.E2ELSchedMs)
		ttftSum += smp.TTFTMs
		if smp.HasTPOT {
			tpot = append(tpot, smp.TPOTMs)
		}
		if smp.HasNTPOT {
			ntpot = append(ntpot, smp.NTPOTMs)
		}
		inTok += float64(r.InputTokens)
		outTok += float64(r.OutputTokens)
		if slo.Met(smp.TTFTMs, smp.TPOTMs, smp.MaxGapMs, smp.E2ELMs) {
			good++
		}
	}
	first := true
	perToken := stats.RankEach(func(yield func(int, float64)) {
		for r := range reqs.All() {
			smp, ok := SampleOf(r)
			if first {
				read(r, smp, ok)
			}
			if !ok {
				continue
			}
			for k, g := range smp.GapsMs {
				yield(famITL, g)
				yield(famITLTok, g/float64(smp.GapTokens(k)))
			}
			// The kernel stamps' delays are NULL unless the cell's events
			// were timed by kernel stamps: a row timed with user stamps
			// has none.
			if kernel {
				for _, d := range r.StampDelaysMs {
					yield(famStampDelay, d)
				}
			}
		}
		first = false
	}, perTokenFamilies, perTokenRanks, stats.MaxHeld)

	// Each family is FillCell's own: summarized in place (sorted), then
	// bounded from the sorted values.
	row.TTFTMs, row.TTFTP50Ms, row.TTFTP90Ms, row.TTFTP95Ms, row.TTFTP99Ms, row.TTFTMaxMs = stats.SummarizeInPlace(ttft).Dist()
	row.TTFTSchedMs, row.TTFTSchedP50Ms, row.TTFTSchedP90Ms, row.TTFTSchedP95Ms, row.TTFTSchedP99Ms, row.TTFTSchedMaxMs = stats.SummarizeInPlace(ttftSched).Dist()
	itl := perToken[famITL]
	row.ITLMs, row.ITLP50Ms, row.ITLP90Ms, row.ITLP95Ms, row.ITLP99Ms, row.ITLMaxMs = itl.Summary().Dist()
	fillRankedBounds(row, "itl", itl)
	row.ITLSamples = results.Some(int64(itl.N))
	itlTok := perToken[famITLTok]
	row.ITLTokMs, row.ITLTokP50Ms, row.ITLTokP90Ms, row.ITLTokP95Ms, row.ITLTokP99Ms, row.ITLTokMaxMs = itlTok.Summary().Dist()
	row.TPOTMs, row.TPOTP50Ms, row.TPOTP90Ms, row.TPOTP95Ms, row.TPOTP99Ms, row.TPOTMaxMs = stats.SummarizeInPlace(tpot).Dist()
	row.E2ELMs, row.E2ELP50Ms, row.E2ELP90Ms, row.E2ELP95Ms, row.E2ELP99Ms, row.E2ELMaxMs = stats.SummarizeInPlace(e2el).Dist()
	row.E2ELSchedMs, row.E2ELSchedP50Ms, row.E2ELSchedP90Ms, row.E2ELSchedP95Ms, row.E2ELSchedP99Ms, row.E2ELSchedMaxMs = stats.SummarizeInPlace(e2elSched).Dist()
	row.SendLagMs, row.SendLagP50Ms, row.SendLagP90Ms, row.SendLagP95Ms, row.SendLagP99, row.SendLagMaxMs = stats.SummarizeInPlace(lag).Dist()
	row.NTPOTMs = results.SomeIf(len(ntpot) > 0, stats.Mean(ntpot))
	fillBounds(row, "ttft", ttft)
	fillBounds(row, "tpot", tpot)
	fillBounds(row, "e2el", e2el)
	row.TPOTSamples = results.Some(int64(len(tpot)))

	row.StampDelayP50Ms, row.StampDelayP99Ms = nil, nil
	if d := perToken[famStampDelay]; d.N > 0 {
		row.StampDelayP50Ms, row.StampDelayP99Ms = results.Some(d.Percentile(50)), results.Some(d.Percentile(99))
	}

	// Throughputs over a window are measured whenever there is a window:
	// a cell whose requests all failed served 0 tokens/s, a measurement.
	row.DurationS = w.Span.Seconds()
	row.SliceS = span.width(n, w.Slice).Seconds()
	row.ReqS, row.OutputTokS, row.TotalTokS, row.DecodeTokS, row.Goodput = nil, nil, nil, nil, nil
	if s := w.Span.Seconds(); s > 0 {
		row.ReqS = results.Some(float64(row.Completed) / s)
		row.OutputTokS = results.Some(outTok / s)
		row.TotalTokS = results.Some((inTok + outTok) / s)
		row.DecodeTokS = results.Some(outTok / s) // the seed's name for output_tok_s
		row.Goodput = results.Some(float64(good) / s)
	}
	// The offered rate is over the send window (first to last send), not
	// over the window that includes the drain after the last send.
	row.SentReqS = nil
	if w.SendSpan > 0 {
		row.SentReqS = results.Some(float64(w.SendIntervals) / w.SendSpan.Seconds())
	}
	row.GoodputRatio = results.SomeIf(reqs.Len() > 0, float64(good)/float64(max(reqs.Len(), 1)))
	row.PrefillTokS = results.SomeIf(ttftSum > 0, inTok/(ttftSum/1000))
	row.EffectiveISL, row.EffectiveOSL = nil, nil
	if row.Completed > 0 {
		row.EffectiveISL = results.Some(inTok / float64(row.Completed))
		row.EffectiveOSL = results.Some(outTok / float64(row.Completed))
	}
	row.AdmittedTok, row.Retires = int64(inTok), row.Completed
	lengths.fill(row)
	reasoning.fill(row)
	tools.fill(row)

	row.Reason = ""
	switch {
	case watched.Err() != nil:
		row.Status, row.Reason = results.StatusError, fmt.Sprintf("the cell's request rows could not be read back: %v", watched.Err())
	case reqs.Len() == 0:
		row.Status, row.Reason = results.StatusError, "no request was sent"
	case row.Failed > 0:
		row.Status = results.StatusError
		row.Reason = fmt.Sprintf("%d of %d requests failed; first: %s", row.Failed, reqs.Len(), firstErr)
	default:
		row.Status = results.StatusOK
	}
}

// The per-token families FillCell ranks in the same readings: one value
// a chunk gap or a token event, 57 million in a 30-minute soak of
// streamed requests of 64 tokens (456 MB each held).
const (
	famITL        = iota // the chunk gaps
	famITLTok            // each gap over the tokens its event carried
	famStampDelay        // the kernel stamps' delays (kernel-stamped cells)
	perTokenFamilies
)

// perTokenRanks are the ranks FillCell reads of each per-token family:
// the summary and the bounds of the gaps, the summary of the gaps per
// token, the p50 and p99 of the stamp delays.
func perTokenRanks(fam, n int) []int {
	switch fam {
	case famITL:
		return append(stats.SummaryRanks(n), boundRanks("itl", n)...)
	case famITLTok:
		return append(stats.SummaryRanks(n), boundRanks("itl_tok", n)...)
	}
	return stats.PercentileRanks(n, 50, 99)
}
