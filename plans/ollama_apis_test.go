package plans_test

import (
	"math"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// TestOllamaAPIs runs plans/testdata/ollama-apis.cue on Ollama v0.17.4: a
// sweep over the Responses API and one over the Messages API, each an ok
// cell at every ladder point with its prompts at isl (calibration held by
// the probe's input_tokens), its TTFT and ITL measured, every request
// answered, and zero reasoning tokens counted (stories260K does not
// think; Ollama's usage says reasoning_tokens 0), not NULL.
func TestOllamaAPIs(t *testing.T) {
	dir := ollamaDir(t)
	modelPresent(t)
	b := startBenchrun(t, dir, "testdata/ollama-apis.cue")
	if code := b.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, b.stderr.String())
	}
	n := map[string]int{}
	for _, c := range readCells(t, b.runDir(t)) {
		n[c.Endpoint]++
		isl := results.ValueOr(c.EffectiveISL, -1)
		// The mean gap, not the median: Ollama sends a stories260K answer's
		// tokens in bursts, several events to a read, and once in CI more
		// than half of a c=1 cell's gaps were 0 (itl p50 0.00 ms).
		if c.Status != results.StatusOK || c.Failed != 0 || c.Completed != 6 || math.Abs(isl-48) > 1 ||
			results.ValueOr(c.TTFTP50Ms, 0) <= 0 || results.ValueOr(c.ITLMs, 0) <= 0 {
			t.Errorf("%s: status %s (%s), %d completed, %d failed, effective isl %.1f, ttft p50 %.1f ms, itl mean %.3f ms",
				c.CellID, c.Status, c.Reason, c.Completed, c.Failed, isl, results.ValueOr(c.TTFTP50Ms, 0), results.ValueOr(c.ITLMs, 0))
		}
		if results.ValueOr(c.AnsweredPct, -1) != 100 || c.ReasoningTokensAvg == nil || *c.ReasoningTokensAvg != 0 || results.ValueOr(c.AnswerTokensAvg, 0) <= 0 {
			t.Errorf("%s: answered %v %%, reasoning %v, answer %v tokens per request; want 100, 0, > 0", c.CellID,
				results.ValueOr(c.AnsweredPct, -1), c.ReasoningTokensAvg, results.ValueOr(c.AnswerTokensAvg, -1))
		}
		t.Logf("%s: ttft p50 %.1f ms, itl p50 %.2f ms, effective isl %.1f osl %.1f", c.CellID,
			results.ValueOr(c.TTFTP50Ms, 0), results.ValueOr(c.ITLP50Ms, 0), isl, results.ValueOr(c.EffectiveOSL, 0))
	}
	if n["responses"] != 2 || n["messages"] != 2 {
		t.Errorf("rows per endpoint %v, want 2 each", n)
	}
}
