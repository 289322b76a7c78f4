package measure

import (
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// reasoningReading gathers a cell's reasoning columns from its completed
// requests (docs/METRICS.md, Reasoning): the time to the first answer
// token over those that answered, the time to the first reasoning token
// over those that reasoned, tokens per request where the count is known,
// each phase's decode rate, and the share that answered. A request row
// older than the columns (nil answered) adds nothing; a cell whose
// requests all predate them keeps every column NULL.
type reasoningReading struct {
	ttfo, ttfr, ttftc, rTok, aTok, rRate, aRate []float64
	answered, known                             int
}

// add reads one completed request.
func (g *reasoningReading) add(r *results.Request) {
	if r.Answered == nil {
		return
	}
	g.known++
	if *r.Answered {
		g.answered++
	}
	if r.TTFOMs != nil {
		g.ttfo = append(g.ttfo, *r.TTFOMs)
	}
	if r.TTFRMs != nil {
		g.ttfr = append(g.ttfr, *r.TTFRMs)
	}
	if r.TTFTCMs != nil {
		g.ttftc = append(g.ttftc, *r.TTFTCMs)
	}
	if r.ReasoningTokens != nil && r.AnswerTokens != nil {
		g.rTok, g.aTok = append(g.rTok, float64(*r.ReasoningTokens)), append(g.aTok, float64(*r.AnswerTokens))
	}
	if v, ok := ReasoningRate(r); ok {
		g.rRate = append(g.rRate, v)
	}
	if v, ok := AnswerRate(r); ok {
		g.aRate = append(g.aRate, v)
	}
}

// fill sets the reasoning columns.
func (g *reasoningReading) fill(row *results.Cell) {
	row.TTFOMs, row.TTFOP50Ms, row.TTFOP90Ms, row.TTFOP95Ms, row.TTFOP99Ms, row.TTFOMaxMs = stats.Summarize(g.ttfo).Dist()
	fillBounds(row, "ttfo", g.ttfo)
	row.TTFOSamples = results.Some(int64(len(g.ttfo)))
	row.TTFRMs = results.SomeIf(len(g.ttfr) > 0, stats.Mean(g.ttfr))
	row.TTFTCMs = results.SomeIf(len(g.ttftc) > 0, stats.Mean(g.ttftc))
	row.ReasoningTokensAvg = results.SomeIf(len(g.rTok) > 0, stats.Mean(g.rTok))
	row.AnswerTokensAvg = results.SomeIf(len(g.aTok) > 0, stats.Mean(g.aTok))
	row.ReasoningTokS = results.SomeIf(len(g.rRate) > 0, stats.Mean(g.rRate))
	row.AnswerTokS = results.SomeIf(len(g.aRate) > 0, stats.Mean(g.aRate))
	row.AnsweredPct = results.SomeIf(g.known > 0, 100*float64(g.answered)/float64(max(g.known, 1)))
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
