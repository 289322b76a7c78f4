package plans_test

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// TestOllamaThinking: a real thinking model (Ollama v0.17.4, stories260K
// with PARSER qwen3-thinking) passes the health check, calibrates its
// prompts and reads ok rows: with thinking on, every output token counted
// as reasoning from the deltas (Ollama reports no reasoning_tokens), its
// time to first reasoning token measured and no request answered (the
// model never ends its thinking, so osl runs out in it); with
// reasoning_effort "none", zero reasoning tokens (not NULL), every request
// answered, and the time to first answer token the TTFT.
func TestOllamaThinking(t *testing.T) {
	dir := ollamaDir(t)
	modelPresent(t)
	b := startBenchrun(t, dir, "testdata/ollama-think.cue")
	if code := b.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, b.stderr.String())
	}
	byStage := map[string]results.Cell{}
	for _, c := range readCells(t, b.runDir(t)) {
		byStage[c.Stage] = c
	}
	for _, stage := range []string{"thinking", "answering"} {
		c, ok := byStage[stage]
		if !ok {
			t.Fatalf("no %s row", stage)
		}
		isl := results.ValueOr(c.EffectiveISL, -1)
		if c.Status != results.StatusOK || c.Failed != 0 || c.Completed != 6 || math.Abs(isl-48) > 1 || results.ValueOr(c.TTFTP50Ms, 0) <= 0 {
			t.Errorf("%s: status %s (%s), %d completed, %d failed, effective isl %.1f, ttft p50 %v; want ok, 6, 0, 48, > 0",
				stage, c.Status, c.Reason, c.Completed, c.Failed, isl, show(c.TTFTP50Ms))
		}
		t.Logf("%s: ttft p50 %.1f ms, ttfr %s ms, ttfo p50 %s ms, reasoning %s, answer %s tokens per request, answered %s %%", stage,
			results.ValueOr(c.TTFTP50Ms, 0), show(c.TTFRMs), show(c.TTFOP50Ms), show(c.ReasoningTokensAvg), show(c.AnswerTokensAvg), show(c.AnsweredPct))
	}
	think, answer := byStage["thinking"], byStage["answering"]
	if results.ValueOr(think.ReasoningTokensAvg, 0) <= 0 || results.ValueOr(think.AnsweredPct, -1) != 0 ||
		results.ValueOr(think.TTFRMs, 0) <= 0 || think.TTFOP50Ms != nil {
		t.Errorf("thinking: reasoning %s tokens per request, answered %s %%, ttfr %s, ttfo p50 %s; want > 0, 0, > 0, NULL",
			show(think.ReasoningTokensAvg), show(think.AnsweredPct), show(think.TTFRMs), show(think.TTFOP50Ms))
	}
	if answer.ReasoningTokensAvg == nil || *answer.ReasoningTokensAvg != 0 || results.ValueOr(answer.AnsweredPct, -1) != 100 ||
		results.ValueOr(answer.AnswerTokensAvg, 0) <= 0 {
		t.Errorf("answering: reasoning %s, answer %s tokens per request, answered %s %%; want 0, > 0, 100",
			show(answer.ReasoningTokensAvg), show(answer.AnswerTokensAvg), show(answer.AnsweredPct))
	}
	// Nothing before the answer: its first token is the first token.
	if ttfo, ttft := results.ValueOr(answer.TTFOP50Ms, -1), results.ValueOr(answer.TTFTP50Ms, -2); math.Abs(ttfo-ttft) > 1e-9 {
		t.Errorf("answering: ttfo p50 %.3f ms, ttft p50 %.3f ms; want equal", ttfo, ttft)
	}
}

// show is a nullable column's value as a test message prints it.
func show(p *float64) string {
	if p == nil {
		return "NULL"
	}
	return strconv.FormatFloat(*p, 'g', 6, 64)
}
