package sweep

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
)

// TestSweepAPIs: a sweep over the Responses or the Messages API measures
// as one over chat does: prompts calibrated to isl exactly (the probe's
// usage.input_tokens), every request's output exact, the reasoning and
// answer split exact (Responses from its usage's
// output_tokens_details.reasoning_tokens, Messages from its thinking
// events), the time to first answer the thinking phase after the TTFT.
func TestSweepAPIs(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) {
		c.TTFT, c.ITL = 5*time.Millisecond, time.Millisecond
		c.Reasoning = sim.Reasoning{Tokens: 30, ITL: 2 * time.Millisecond}
	})
	for _, ep := range []string{"responses", "messages"} {
		st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: %q,
			cells: [{isl: 32, osl: 50}], concurrency: [2], requests: 4, warmup: 0`, url, ep), "")
		if err := st.Validate(check(t, p)); err != nil {
			t.Fatalf("%s: vet: %v", ep, err)
		}
		c, err := runStage(t, st, p)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := byID(c.cells)["sweep/32:50/c2"]
		if !ok {
			t.Fatalf("%s: no row among %v", ep, keys(byID(c.cells)))
		}
		if r.Status != results.StatusOK || r.Endpoint != ep || r.Completed != 4 {
			t.Fatalf("%s: status %s (%s), endpoint %s, %d completed", ep, r.Status, r.Reason, r.Endpoint, r.Completed)
		}
		if v(r.EffectiveISL) != 32 || v(r.EffectiveOSL) != 50 || v(r.ReasoningTokensAvg) != 30 || v(r.AnswerTokensAvg) != 20 || v(r.AnsweredPct) != 100 {
			t.Errorf("%s: isl %v osl %v, reasoning %v answer %v, answered %v%%; want 32, 50, 30, 20, 100",
				ep, v(r.EffectiveISL), v(r.EffectiveOSL), v(r.ReasoningTokensAvg), v(r.AnswerTokensAvg), v(r.AnsweredPct))
		}
		// A late first event (a busy machine) shortens the difference:
		// a few ms of room below.
		if d := v(r.TTFOP50Ms) - v(r.TTFTP50Ms); d < 30*2-5 || d > 30*2+20 {
			t.Errorf("%s: ttfo p50 %.1f ms is %.1f ms after ttft p50 %.1f, want the thinking's 60", ep, v(r.TTFOP50Ms), d, v(r.TTFTP50Ms))
		}
		if v(r.ITLP50Ms) < 0.5 || v(r.ITLP50Ms) > 5 {
			t.Errorf("%s: itl p50 %.3f ms, the simulator's 1 to 2", ep, v(r.ITLP50Ms))
		}
	}
}

// TestSweepAPIControls: the Responses API takes the plan's reasoning
// controls (reasoning_effort sent as reasoning.effort: the simulator
// thinks half its 30 tokens at low, twice at high), the Messages API its
// thinking through body (thinking disabled: no reasoning, the whole osl
// answered); vet refuses a reasoning control on messages at the field.
func TestSweepAPIControls(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) {
		c.TTFT, c.ITL = 2*time.Millisecond, 500*time.Microsecond
		c.Reasoning = sim.Reasoning{Tokens: 30}
	})
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "responses",
		cells: [{isl: 16, osl: 100}], reasoning: [{reasoning_effort: "low"}, {reasoning_effort: "high"}],
		concurrency: [1], requests: 2, warmup: 0`, url), "")
	if err := st.Validate(check(t, p)); err != nil {
		t.Fatalf("vet: %v", err)
	}
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	rows := byID(c.cells)
	for id, think := range map[string]float64{"sweep/16:100/c1/reasoning_effort=low": 15, "sweep/16:100/c1/reasoning_effort=high": 60} {
		r, ok := rows[id]
		if !ok || r.Status != results.StatusOK || v(r.ReasoningTokensAvg) != think || v(r.AnswerTokensAvg) != 100-think {
			t.Errorf("%s: found %v, status %s (%s), reasoning %v answer %v; want ok, %v, %v", id, ok, r.Status, r.Reason,
				v(r.ReasoningTokensAvg), v(r.AnswerTokensAvg), think, 100-think)
		}
	}
	st, p = loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "messages", body: {thinking: {type: "disabled"}},
		cells: [{isl: 16, osl: 40}], concurrency: [1], requests: 2, warmup: 0`, url), "")
	if c, err = runStage(t, st, p); err != nil {
		t.Fatal(err)
	}
	if r := c.cells[0]; r.Status != results.StatusOK || v(r.ReasoningTokensAvg) != 0 || v(r.AnswerTokensAvg) != 40 || v(r.AnsweredPct) != 100 {
		t.Errorf("messages, thinking disabled: status %s (%s), reasoning %v answer %v answered %v%%", r.Status, r.Reason,
			v(r.ReasoningTokensAvg), v(r.AnswerTokensAvg), v(r.AnsweredPct))
	}
	st, p = loadStage(t, `kind: "sweep", target: "http://x", endpoint: "messages", reasoning_effort: "low"`, "")
	err = st.Validate(check(t, p))
	if err == nil || !strings.Contains(err.Error(), `plan.cue:`) || !strings.Contains(err.Error(), `stages.sweep.reasoning_effort: a reasoning control applies to endpoint "chat", "responses" only, not "messages"`) {
		t.Errorf("messages with reasoning_effort: err = %v", err)
	}
}

// TestSweepThinkingBudget: thinking_budget as the reasoning axis of a
// Messages sweep sends thinking {type: "enabled", budget_tokens}; the
// simulator's 200-token thinking stops at the budget and the answer
// follows (reasoning exactly 20 and 80 tokens, all answered), and a
// budget over max_tokens leaves the thinking to end the request:
// unanswered, answered_pct 0. vet refuses thinking_budget off messages
// at the field.
func TestSweepThinkingBudget(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) {
		c.TTFT, c.ITL = 2*time.Millisecond, 200*time.Microsecond
		c.Reasoning = sim.Reasoning{Tokens: 200}
	})
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "messages",
		cells: [{isl: 16, osl: 100}], reasoning: [{thinking_budget: 20}, {thinking_budget: 80}, {thinking_budget: 1024}],
		concurrency: [2], requests: 4, warmup: 0`, url), "")
	if err := st.Validate(check(t, p)); err != nil {
		t.Fatalf("vet: %v", err)
	}
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	rows := byID(c.cells)
	for id, want := range map[string][3]float64{
		"sweep/16:100/c2/thinking_budget=20":   {20, 80, 100},
		"sweep/16:100/c2/thinking_budget=80":   {80, 20, 100},
		"sweep/16:100/c2/thinking_budget=1024": {100, 0, 0},
	} {
		r, ok := rows[id]
		if !ok || r.Status != results.StatusOK || v(r.ReasoningTokensAvg) != want[0] || v(r.AnswerTokensAvg) != want[1] || v(r.AnsweredPct) != want[2] {
			t.Errorf("%s: found %v (of %v), status %s (%s), reasoning %v answer %v answered %v %%; want ok, %v", id, ok, keys(rows), r.Status, r.Reason,
				v(r.ReasoningTokensAvg), v(r.AnswerTokensAvg), v(r.AnsweredPct), want)
		}
	}
	st, p = loadStage(t, `kind: "sweep", target: "http://x", endpoint: "chat", cells: [{isl: 8, osl: 8, thinking_budget: 64}]`, "")
	err = st.Validate(check(t, p))
	if err == nil || !strings.Contains(err.Error(), `plan.cue:`) || !strings.Contains(err.Error(), `stages.sweep.cells.0.thinking_budget: a reasoning control applies to endpoint "messages" only, not "chat"`) {
		t.Errorf("chat with thinking_budget: err = %v", err)
	}
}
