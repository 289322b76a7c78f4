package validate

import (
	"fmt"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
	"github.com/benchrun/benchrun/schema"
)

// fillRow computes the documents' row from the timed requests over the
// timed window, with the sweep's definitions (docs/METRICS.md), so that a
// ratio divides like by like. Stages never import each other, so this is
// the sweep's core metrics again, not its telemetry or notes. Failed
// requests are counted and kept out of every latency figure.
func fillRow(row *results.Cell, rs []loadgen.Result, window time.Duration, slo schema.SLO) {
	var ttft, e2el, tpot, itl, itlTok, ntpot, lag []float64
	var inTok, outTok, ttftSum float64
	var good int64
	var firstErr error
	// First: it may set a mixed cell's kernel stamps back to user ones.
	stampNote := loadgen.CellStamps(row, rs)
	for _, r := range rs {
		row.ConnRetries += int64(r.ConnRetries)
		lag = append(lag, ms(r.SendLag()))
		if !r.OK() {
			row.Failed++
			if firstErr == nil {
				firstErr = r.Err
			}
			continue
		}
		row.Completed++
		t, e := ms(r.TTFT()), ms(r.E2EL())
		ttft, e2el = append(ttft, t), append(e2el, e)
		ttftSum += t
		var reqTPOT, maxGap float64
		if r.OutputTokens > 1 {
			reqTPOT = (e - t) / float64(r.OutputTokens-1)
			tpot = append(tpot, reqTPOT)
		}
		if r.OutputTokens > 0 {
			ntpot = append(ntpot, e/float64(r.OutputTokens))
		}
		for k := 1; k < len(r.Tokens); k++ {
			g := ms(r.Tokens[k].At.Sub(r.Tokens[k-1].At))
			itl = append(itl, g)
			itlTok = append(itlTok, g/float64(max(r.Tokens[k].Tokens, 1)))
			maxGap = max(maxGap, g)
		}
		inTok += float64(r.InputTokens)
		outTok += float64(r.OutputTokens)
		if slo.Met(t, reqTPOT, maxGap, e) {
			good++
		}
	}
	w := window.Seconds()
	row.DurationS = w
	row.TTFTMs, row.TTFTP50Ms, row.TTFTP90Ms, row.TTFTP95Ms, row.TTFTP99Ms, row.TTFTMaxMs = stats.Summarize(ttft).Dist()
	row.ITLMs, row.ITLP50Ms, row.ITLP90Ms, row.ITLP95Ms, row.ITLP99Ms, row.ITLMaxMs = stats.Summarize(itl).Dist()
	row.ITLTokMs, row.ITLTokP50Ms, row.ITLTokP90Ms, row.ITLTokP95Ms, row.ITLTokP99Ms, row.ITLTokMaxMs = stats.Summarize(itlTok).Dist()
	row.TPOTMs, row.TPOTP50Ms, row.TPOTP90Ms, row.TPOTP95Ms, row.TPOTP99Ms, row.TPOTMaxMs = stats.Summarize(tpot).Dist()
	row.E2ELMs, row.E2ELP50Ms, row.E2ELP90Ms, row.E2ELP95Ms, row.E2ELP99Ms, row.E2ELMaxMs = stats.Summarize(e2el).Dist()
	row.SendLagMs, row.SendLagP50Ms, row.SendLagP90Ms, row.SendLagP95Ms, row.SendLagP99, row.SendLagMaxMs = stats.Summarize(lag).Dist()
	row.NTPOTMs = results.SomeIf(len(ntpot) > 0, stats.Mean(ntpot))
	if w > 0 {
		row.ReqS = results.Some(float64(row.Completed) / w)
		row.OutputTokS = results.Some(outTok / w)
		row.TotalTokS = results.Some((inTok + outTok) / w)
		row.DecodeTokS = results.Some(outTok / w)
		row.Goodput = results.Some(float64(good) / w)
	}
	if len(rs) > 0 {
		row.GoodputRatio = results.Some(float64(good) / float64(len(rs)))
	}
	if ttftSum > 0 {
		row.PrefillTokS = results.Some(inTok / (ttftSum / 1000))
	}
	if row.Completed > 0 {
		// The documents' token length, from the server's usage.
		row.EffectiveISL = results.Some(inTok / float64(row.Completed))
		row.EffectiveOSL = results.Some(outTok / float64(row.Completed))
	}
	row.AdmittedTok, row.Retires = int64(inTok), row.Completed
	row.Notes = fmt.Sprintf("prompts from %d real documents (isl is the synthetic cell's; see effective_isl and synthetic_effective_isl)", row.Documents)
	if stampNote != "" {
		row.Notes += "; " + stampNote
	}
	switch {
	case len(rs) == 0:
		row.Status, row.Reason = results.StatusError, "no request was sent"
	case row.Failed > 0:
		row.Status, row.Reason = results.StatusError, fmt.Sprintf("%d of %d requests failed; first: %v", row.Failed, len(rs), firstErr)
	default:
		row.Status = results.StatusOK
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
