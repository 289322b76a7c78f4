package measure

import (
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// fillReasoning sets a cell's reasoning columns from its completed
// requests (docs/METRICS.md, Reasoning): the time to the first answer
// token over those that answered, the time to the first reasoning token
// over those that reasoned, tokens per request where the count is known,
// each phase's decode rate, and the share that answered. A request row
// older than the columns (nil answered) adds nothing; a cell whose
// requests all predate them keeps every column NULL.
func fillReasoning(row *results.Cell, reqs results.Requests) {
	var ttfo, ttfr, ttftc, rTok, aTok, rRate, aRate []float64
	answered, known := 0, 0
	for r := range reqs.All() {
		if _, ok := SampleOf(r); !ok || r.Answered == nil {
			continue
		}
		known++
		if *r.Answered {
			answered++
		}
		if r.TTFOMs != nil {
			ttfo = append(ttfo, *r.TTFOMs)
		}
		if r.TTFRMs != nil {
			ttfr = append(ttfr, *r.TTFRMs)
		}
		if r.TTFTCMs != nil {
			ttftc = append(ttftc, *r.TTFTCMs)
		}
		if r.ReasoningTokens != nil && r.AnswerTokens != nil {
			rTok, aTok = append(rTok, float64(*r.ReasoningTokens)), append(aTok, float64(*r.AnswerTokens))
		}
		if v, ok := ReasoningRate(r); ok {
			rRate = append(rRate, v)
		}
		if v, ok := AnswerRate(r); ok {
			aRate = append(aRate, v)
		}
	}
	row.TTFOMs, row.TTFOP50Ms, row.TTFOP90Ms, row.TTFOP95Ms, row.TTFOP99Ms, row.TTFOMaxMs = stats.Summarize(ttfo).Dist()
	fillBounds(row, "ttfo", ttfo)
	row.TTFOSamples = results.Some(int64(len(ttfo)))
	row.TTFRMs = results.SomeIf(len(ttfr) > 0, stats.Mean(ttfr))
	row.TTFTCMs = results.SomeIf(len(ttftc) > 0, stats.Mean(ttftc))
	row.ReasoningTokensAvg = results.SomeIf(len(rTok) > 0, stats.Mean(rTok))
	row.AnswerTokensAvg = results.SomeIf(len(aTok) > 0, stats.Mean(aTok))
	row.ReasoningTokS = results.SomeIf(len(rRate) > 0, stats.Mean(rRate))
	row.AnswerTokS = results.SomeIf(len(aRate) > 0, stats.Mean(aRate))
	row.AnsweredPct = results.SomeIf(known > 0, 100*float64(answered)/float64(max(known, 1)))
}

// ReasoningRate is request r's thinking-phase decode rate in tokens/s:
// its reasoning tokens over the time from the first reasoning token to
// the first answer token (each reasoning token's time ends at the next
// event), or, when it never answered, its reasoning tokens but the first
// over the time to its last reasoning event. False without reasoning, or
// without a span to divide by.
func ReasoningRate(r *results.Request) (float64, bool) {
	if r.TTFRMs == nil || r.ReasoningTokens == nil || *r.ReasoningTokens <= 0 {
		return 0, false
	}
	n, span := float64(*r.ReasoningTokens), 0.0
	switch {
	case r.TTFOMs != nil:
		span = *r.TTFOMs - *r.TTFRMs
	case r.ReasoningEndMs != nil:
		n, span = n-1, *r.ReasoningEndMs-*r.TTFRMs
	}
	if span <= 0 || n <= 0 {
		return 0, false
	}
	return n / (span / 1000), true
}

// AnswerRate is request r's answer decode rate in tokens/s: its answer
// tokens but the first over the time from the first answer token to its
// last token event. False with fewer than two answer tokens.
func AnswerRate(r *results.Request) (float64, bool) {
	if r.TTFOMs == nil || r.E2ELMs == nil || r.AnswerTokens == nil || *r.AnswerTokens < 2 {
		return 0, false
	}
	span := *r.E2ELMs - *r.TTFOMs
	if span <= 0 {
		return 0, false
	}
	return float64(*r.AnswerTokens-1) / (span / 1000), true
}
