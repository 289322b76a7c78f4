package measure

import (
	"math"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// Time slices cut a cell's timed pass into fixed windows (the slices
// table, results.Slice). A plan's width is kept unless it would give more
// than MaxSlices windows: then the narrowest 1-2-5 width that gives at
// most MaxSlices is used, and the cell's slice_s says which.
const (
	// AutoSlices is about how many windows the default width gives.
	AutoSlices = 10
	// MaxSlices bounds the windows of one cell.
	MaxSlices = 1000
)

// passSpan is the timed pass the requests were sent in: from the first
// scheduled send (a request's send less its send lag) to the last event
// (an ok request's end; a failed request's send).
func passSpan(reqs results.Requests) (start, end time.Time) {
	for r := range reqs.All() {
		sched := r.SentAt.Add(-msDuration(r.SendLagMs))
		if start.IsZero() || sched.Before(start) {
			start = sched
		}
		last := r.SentAt
		if done, ok := requestEnd(r); ok {
			last = done
		}
		if last.After(end) {
			end = last
		}
	}
	return start, end
}

// requestEnd is when an ok request's last byte arrived.
func requestEnd(r *results.Request) (time.Time, bool) {
	if r.Status != results.StatusOK || r.E2ELMs == nil {
		return time.Time{}, false
	}
	return r.SentAt.Add(msDuration(*r.E2ELMs)), true
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// SliceWidth is the width a cell's windows use: want (the plan's slice),
// or with want 0 the 1-2-5 width that gives about AutoSlices windows,
// widened when either would give more than MaxSlices. 0 without requests.
func SliceWidth(reqs results.Requests, want time.Duration) time.Duration {
	if reqs == nil || reqs.Len() == 0 {
		return 0
	}
	start, end := passSpan(reqs)
	span := end.Sub(start)
	if want <= 0 {
		want = niceWidth(span / AutoSlices)
	}
	if span/want >= MaxSlices {
		want = niceWidth(span / MaxSlices)
		for span/want >= MaxSlices {
			want = niceWidth(want + 1)
		}
	}
	return want
}

// niceWidth rounds d up to 1, 2 or 5 times a power of ten of
// microseconds (at least 1 ms), so windows start on round offsets.
func niceWidth(d time.Duration) time.Duration {
	if d <= time.Millisecond {
		return time.Millisecond
	}
	us := float64(d) / float64(time.Microsecond)
	mag := math.Pow(10, math.Floor(math.Log10(us)))
	for _, m := range []float64{1, 2, 5, 10} {
		if us <= m*mag {
			return time.Duration(m*mag) * time.Microsecond
		}
	}
	return time.Duration(10*mag) * time.Microsecond
}

// sliceAcc gathers one window's events.
type sliceAcc struct {
	sent, completed, failed int64
	busy                    time.Duration
	tokens                  float64
	ttft, itl, e2el, lag    []float64
	gaps                    int           // the window's chunk gaps (itl is filled later, a few windows at a time)
	ranked                  *stats.Ranked // the windows of a cell of more than stats.MaxHeld gaps: ranked, not held
}

// fillSliceGaps fills the windows' gap families: held, read in one
// reading of the rows, when all of them are at most stats.MaxHeld gaps;
// else every window is ranked, all in the same readings
// (stats.RankEach), so a long cell's gaps, one per token, are never all
// held and its rows are read a few times in all, not a few times a
// window (a 30-minute soak's 30 windows of 1.9 million gaps each read its
// 900,000 rows 90 times, one window after the other).
func fillSliceGaps(acc []sliceAcc, reqs results.Requests, at func(time.Time) int) {
	each := func(fn func(w int, g float64)) {
		for r := range reqs.All() {
			smp, ok := SampleOf(r)
			if !ok {
				continue
			}
			tok := r.SentAt.Add(msDuration(smp.TTFTMs))
			for _, g := range smp.GapsMs {
				tok = tok.Add(msDuration(g))
				fn(at(tok), g)
			}
		}
	}
	total := 0
	for i := range acc {
		total += acc[i].gaps
	}
	if total == 0 {
		return
	}
	if total <= stats.MaxHeld {
		for i := range acc {
			acc[i].itl = make([]float64, 0, acc[i].gaps)
		}
		each(func(i int, g float64) { acc[i].itl = append(acc[i].itl, g) })
		return
	}
	ranked := stats.RankEach(func(yield func(int, float64)) { each(yield) }, len(acc),
		func(_, n int) []int { return stats.PercentileRanks(n, 50, 99, 100) }, stats.MaxHeld)
	for i := range acc {
		if acc[i].gaps > 0 {
			acc[i].ranked = &ranked[i]
		}
	}
}

// Slices cuts a cell's timed pass into windows of the cell's slice_s
// (SliceWidth's when it is 0: rows older than schema version 10) and
// says what happened in each (results.Slice). The rows carry the cell's
// identity and are as the slices table stores them (results.Stored),
// whether a sink derives them or reads them back. nil without requests.
func Slices(cell results.Cell, reqs results.Requests) []results.Slice {
	width := SliceWidth(reqs, time.Duration(cell.SliceS*float64(time.Second)))
	if width <= 0 {
		return nil
	}
	start, end := passSpan(reqs)
	n := max(int((end.Sub(start)+width-1)/width), 1)
	acc := make([]sliceAcc, n)
	at := func(t time.Time) int { return min(max(int(t.Sub(start)/width), 0), n-1) }
	for r := range reqs.All() {
		a := &acc[at(r.SentAt)]
		a.sent++
		a.lag = append(a.lag, r.SendLagMs)
		smp, ok := SampleOf(r)
		if !ok {
			a.failed++
			continue
		}
		done := r.SentAt.Add(msDuration(smp.E2ELMs))
		e := &acc[at(done)]
		e.completed++
		e.e2el = append(e.e2el, smp.E2ELMs)
		addBusy(acc, start, width, r.SentAt, done)
		tokens := eventTokens(r)
		tok := r.SentAt.Add(msDuration(smp.TTFTMs))
		first := &acc[at(tok)]
		first.ttft = append(first.ttft, smp.TTFTMs)
		first.tokens += tokens[0]
		for k, g := range smp.GapsMs {
			tok = tok.Add(msDuration(g))
			w := &acc[at(tok)]
			w.gaps++
			w.tokens += tokens[k+1]
		}
	}
	fillSliceGaps(acc, reqs, at)
	out := make([]results.Slice, n)
	for i := range acc {
		ws := start.Add(time.Duration(i) * width)
		we := ws.Add(width)
		if end.Before(we) {
			we = end
		}
		if !we.After(ws) {
			we = ws.Add(width) // a pass of one instant: one full window
		}
		out[i] = results.Stored(acc[i].row(cell, i, start, ws, we.Sub(ws)))
	}
	return out
}

// eventTokens is a request's output tokens spread over its events (the
// first token, then one event per gap) in proportion to the tokens each
// carried (chunk_tokens; evenly without them), so that the windows' tokens
// add up to the requests' output_tokens, as the cell's throughput counts
// them.
func eventTokens(r *results.Request) []float64 {
	n := len(r.ChunkGapsMs) + 1
	out := make([]float64, n)
	var carried float64
	for k := range out {
		out[k] = 1
		if len(r.ChunkTokens) == n {
			out[k] = float64(r.ChunkTokens[k])
		}
		carried += out[k]
	}
	for k := range out {
		if carried > 0 {
			out[k] *= float64(r.OutputTokens) / carried
		} else {
			out[k] = float64(r.OutputTokens) / float64(n)
		}
	}
	return out
}

// addBusy spreads a request's time in flight over the windows it covers.
func addBusy(acc []sliceAcc, start time.Time, width time.Duration, from, to time.Time) {
	for i := max(int(from.Sub(start)/width), 0); i < len(acc); i++ {
		ws := start.Add(time.Duration(i) * width)
		if !ws.Before(to) {
			break
		}
		lo, hi := from, to
		if ws.After(lo) {
			lo = ws
		}
		if we := ws.Add(width); we.Before(hi) {
			hi = we
		}
		if hi.After(lo) {
			acc[i].busy += hi.Sub(lo)
		}
	}
}

func (a *sliceAcc) row(cell results.Cell, i int, passStart, ws time.Time, w time.Duration) results.Slice {
	sec := w.Seconds()
	s := results.Slice{
		RunID: cell.RunID, Plan: cell.Plan, Stage: cell.Stage, CellID: cell.CellID,
		Attempt: cell.Attempt, Measurement: cell.Measurement,
		Slice: int64(i), StartS: ws.Sub(passStart).Seconds(), StartedAt: ws, WidthS: sec,
		Sent: a.sent, Completed: a.completed, Failed: a.failed,
		InFlight: a.busy.Seconds() / sec, ReqS: float64(a.completed) / sec, OutputTokS: a.tokens / sec,
	}
	s.TTFTP50Ms, s.TTFTP99Ms = p50p99(a.ttft)
	s.ITLP50Ms, s.ITLP99Ms = p50p99(a.itl)
	if a.ranked != nil {
		s.ITLP50Ms, s.ITLP99Ms = results.Some(a.ranked.Percentile(50)), results.Some(a.ranked.Percentile(99))
		s.ITLMaxMs = results.Some(a.ranked.At(a.ranked.N - 1))
	}
	s.E2ELP50Ms, s.E2ELP99Ms = p50p99(a.e2el)
	_, s.SendLagP99Ms = p50p99(a.lag)
	if len(a.itl) > 0 {
		s.ITLMaxMs = results.Some(stats.Summarize(a.itl).Max)
	}
	return s
}

func p50p99(xs []float64) (p50, p99 *float64) {
	if len(xs) == 0 {
		return nil, nil
	}
	sum := stats.Summarize(xs)
	return results.Some(sum.P50), results.Some(sum.P99)
}
