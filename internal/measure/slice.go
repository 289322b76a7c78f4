package measure

import (
	"math"
	"slices"
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

// passReading finds the timed pass the requests were sent in: from the
// first scheduled send (a request's send less its send lag) to the last
// event (an ok request's end; a failed request's send).
type passReading struct{ start, end time.Time }

func (p *passReading) add(r *results.Request) {
	sched := r.SentAt.Add(-msDuration(r.SendLagMs))
	if p.start.IsZero() || sched.Before(p.start) {
		p.start = sched
	}
	last := r.SentAt
	if done, ok := requestEnd(r); ok {
		last = done
	}
	if last.After(p.end) {
		p.end = last
	}
}

// width is the width the windows of the pass of n requests use
// (SliceWidth).
func (p *passReading) width(n int, want time.Duration) time.Duration {
	if n == 0 {
		return 0
	}
	span := p.end.Sub(p.start)
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

// readPass reads the timed pass of reqs.
func readPass(reqs results.Requests) passReading {
	var p passReading
	for r := range reqs.All() {
		p.add(r)
	}
	return p
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
	p := readPass(reqs)
	return p.width(reqs.Len(), want)
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
	ttft, e2el, lag         []float64
	itl                     stats.Ranked // the window's chunk gaps, ranked with every window's (Slices)
}

// Slices cuts a cell's timed pass into windows of the cell's slice_s
// (SliceWidth's when it is 0: rows older than schema version 10) and
// says what happened in each (results.Slice). The rows carry the cell's
// identity and are as the slices table stores them (results.Stored),
// whether a sink derives them or reads them back. nil without requests.
//
// It reads the rows once for the pass's span, then once for the
// windows' events, which also starts ranking every window's chunk gaps
// (stats.RankEach): they are held when they are at most stats.MaxHeld in
// all, else narrowed in a few more readings for all windows at once, so
// a long cell's gaps, one per token, are never all held and its rows are
// read a few times in all, not a few times a window (a 30-minute soak's
// 30 windows of 1.9 million gaps each read its 900,000 rows 90 times,
// one window after the other).
func Slices(cell results.Cell, reqs results.Requests) []results.Slice {
	if m, ok := reqs.(interface{ Memo(any, func() any) any }); ok {
		// Cut once per cell row for every consumer of the same rows
		// (results.Memoize): the Parquet sink's and the report's.
		key := sliceKey{cell.RunID, cell.Plan, cell.Stage, cell.CellID, cell.Attempt, cell.Measurement, cell.SliceS}
		return slices.Clone(m.Memo(key, func() any { return cutSlices(cell, reqs) }).([]results.Slice))
	}
	return cutSlices(cell, reqs)
}

// sliceKey is what of a cell row its slices depend on: its identity,
// which they carry, and its width.
type sliceKey struct {
	runID, plan, stage, cellID string
	attempt, measurement       int64
	width                      float64
}

func cutSlices(cell results.Cell, reqs results.Requests) []results.Slice {
	if reqs == nil || reqs.Len() == 0 {
		return nil
	}
	pass := readPass(reqs)
	width := pass.width(reqs.Len(), time.Duration(cell.SliceS*float64(time.Second)))
	if width <= 0 {
		return nil
	}
	start, end := pass.start, pass.end
	n := max(int((end.Sub(start)+width-1)/width), 1)
	acc := make([]sliceAcc, n)
	at := func(t time.Time) int { return min(max(int(t.Sub(start)/width), 0), n-1) }
	first := true
	gaps := stats.RankEach(func(yield func(int, float64)) {
		for r := range reqs.All() {
			smp, ok := SampleOf(r)
			if first {
				a := &acc[at(r.SentAt)]
				a.sent++
				a.lag = append(a.lag, r.SendLagMs)
				if !ok {
					a.failed++
				}
			}
			if !ok {
				continue
			}
			var tokens []float64
			tok := r.SentAt.Add(msDuration(smp.TTFTMs))
			if first {
				done := r.SentAt.Add(msDuration(smp.E2ELMs))
				e := &acc[at(done)]
				e.completed++
				e.e2el = append(e.e2el, smp.E2ELMs)
				addBusy(acc, start, width, r.SentAt, done)
				tokens = eventTokens(r)
				w := &acc[at(tok)]
				w.ttft = append(w.ttft, smp.TTFTMs)
				w.tokens += tokens[0]
			}
			for k, g := range smp.GapsMs {
				tok = tok.Add(msDuration(g))
				i := at(tok)
				if first {
					acc[i].tokens += tokens[k+1]
				}
				yield(i, g)
			}
		}
		first = false
	}, n, func(_, k int) []int { return stats.PercentileRanks(k, 50, 99, 100) }, stats.MaxHeld)
	out := make([]results.Slice, n)
	for i := range acc {
		acc[i].itl = gaps[i]
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
	if a.itl.N > 0 {
		s.ITLP50Ms, s.ITLP99Ms = results.Some(a.itl.Percentile(50)), results.Some(a.itl.Percentile(99))
		s.ITLMaxMs = results.Some(a.itl.At(a.itl.N - 1))
	}
	s.E2ELP50Ms, s.E2ELP99Ms = p50p99(a.e2el)
	_, s.SendLagP99Ms = p50p99(a.lag)
	return s
}

func p50p99(xs []float64) (p50, p99 *float64) {
	if len(xs) == 0 {
		return nil, nil
	}
	sum := stats.Summarize(xs)
	return results.Some(sum.P50), results.Some(sum.P99)
}
