package sweep

import (
	"fmt"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// fillRow computes a cell row's metrics from the timed requests
// (docs/METRICS.md has the definitions). Failed requests are counted, never
// mixed into latency statistics.
func fillRow(row *results.Cell, rs []loadgen.Result, warmTTFT []float64, cfg Config) {
	var ttft, e2el, tpot, itl []float64
	var inTok, outTok, ttftSum float64
	var first, last time.Time
	var firstErr error
	usageFromServer := true
	for _, r := range rs {
		if first.IsZero() || r.Sent.Before(first) {
			first = r.Sent
		}
		if r.Finished.After(last) {
			last = r.Finished
		}
		if !r.OK() {
			row.Failed++
			if firstErr == nil {
				firstErr = r.Err
			}
			continue
		}
		row.Completed++
		if !r.UsageReported {
			usageFromServer = false
		}
		t := ms(r.TTFT())
		ttft = append(ttft, t)
		ttftSum += t
		e := ms(r.E2EL())
		e2el = append(e2el, e)
		if r.OutputTokens > 1 {
			tpot = append(tpot, (e-t)/float64(r.OutputTokens-1))
		}
		for k := 1; k < len(r.Tokens); k++ {
			itl = append(itl, ms(r.Tokens[k].At.Sub(r.Tokens[k-1].At)))
		}
		inTok += float64(r.InputTokens)
		outTok += float64(r.OutputTokens)
	}
	window := last.Sub(first).Seconds()
	row.DurationS = window

	ts := stats.Summarize(ttft)
	row.TTFTMs, row.TTFTP50Ms, row.TTFTP90Ms, row.TTFTP99Ms, row.TTFTMaxMs = ts.Mean, ts.P50, ts.P90, ts.P99, ts.Max
	is := stats.Summarize(itl)
	row.ITLMs, row.ITLP50Ms, row.ITLP90Ms, row.ITLP99Ms, row.ITLMaxMs = is.Mean, is.P50, is.P90, is.P99, is.Max
	ps := stats.Summarize(tpot)
	row.TPOTMs, row.TPOTP50Ms, row.TPOTP99Ms = ps.Mean, ps.P50, ps.P99
	es := stats.Summarize(e2el)
	row.E2ELMs, row.E2ELP50Ms, row.E2ELP99Ms = es.Mean, es.P50, es.P99

	if window > 0 {
		row.ReqS = float64(row.Completed) / window
		row.OutputTokS = outTok / window
		row.TotalTokS = (inTok + outTok) / window
		row.DecodeTokS = row.OutputTokS
	}
	if ttftSum > 0 {
		row.PrefillTokS = inTok / (ttftSum / 1000)
	}
	if row.Completed > 0 {
		row.EffectiveISL = inTok / float64(row.Completed)
		row.EffectiveOSL = outTok / float64(row.Completed)
	}

	var notes []string
	if cfg.Prompts == "warm" {
		notes = append(notes, "prompts=warm (one prompt set reused every pass; a prefix cache may serve repeats)")
	} else {
		notes = append(notes, "prompts=cold (a fresh prompt every request)")
	}
	if row.Completed > 0 && !usageFromServer {
		notes = append(notes, "tokens counted from events (the server sent no usage)")
	}
	if len(warmTTFT) > 0 && ts.N > 0 {
		// A cell whose last warm-up pass is far from the timed pass was
		// still warming up: say so rather than hide it.
		w := stats.Summarize(warmTTFT).P50
		if w > 1.5*ts.P50 && w-ts.P50 > 5 {
			notes = append(notes, fmt.Sprintf("still cold after warm-up: last warm-up ttft p50 %.1f ms vs timed %.1f ms", w, ts.P50))
		}
	}
	row.Notes = strings.Join(notes, "; ")

	switch {
	case len(rs) == 0:
		row.Status, row.Reason = results.StatusError, "no request was sent"
	case row.Failed > 0:
		row.Status = results.StatusError
		row.Reason = fmt.Sprintf("%d of %d requests failed; first: %v", row.Failed, len(rs), firstErr)
	default:
		row.Status = results.StatusOK
	}
}

// requestRows turns results into raw request rows.
func requestRows(cell results.Cell, rs []loadgen.Result) []results.Request {
	out := make([]results.Request, 0, len(rs))
	for i, r := range rs {
		q := results.Request{
			Stage: cell.Stage, CellID: cell.CellID, Seq: int64(i), ResponseID: r.ResponseID,
			SentAt: r.Sent.UTC(), SendLagMs: ms(r.SendLag()),
			InputTokens: int64(r.InputTokens), OutputTokens: int64(r.OutputTokens), Chunks: int64(len(r.Tokens)),
			Status: results.StatusOK,
		}
		if r.OK() {
			q.TTFTMs, q.E2ELMs = ms(r.TTFT()), ms(r.E2EL())
			q.ChunkGapsMs = make([]float64, 0, max(len(r.Tokens)-1, 0))
			for k := 1; k < len(r.Tokens); k++ {
				q.ChunkGapsMs = append(q.ChunkGapsMs, ms(r.Tokens[k].At.Sub(r.Tokens[k-1].At)))
			}
		} else {
			q.Status, q.Error = results.StatusError, r.Err.Error()
		}
		out = append(out, q)
	}
	return out
}
