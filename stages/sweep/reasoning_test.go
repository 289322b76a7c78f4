package sweep

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine/machinetest"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
)

// TestReasoningAxis: "effort low vs high" is one plan. The simulator
// thinks 40 tokens at medium effort (20 at low, 80 at high) at 2 ms a
// token after a 5 ms TTFT, then answers the rest of osl; each axis entry
// is its own row (cell id and reasoning column), with its requests'
// reasoning and answer tokens exact (the generic persona reports them in
// its usage, and the notes say so), its time to first answer the
// thinking phase later than its TTFT, and every request answered. A
// cell whose budget (osl 10) the thinking uses up is ok, unanswered.
func TestReasoningAxis(t *testing.T) {
	machine := machinetest.Start()
	_, url := startSim(t, func(c *sim.Config) {
		c.TTFT, c.ITL = 5*time.Millisecond, time.Millisecond
		c.Reasoning = sim.Reasoning{Tokens: 40, ITL: 2 * time.Millisecond, Field: sim.FieldReasoning}
	})
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, endpoint: "chat",
		cells: [{isl: 16, osl: 120}, {isl: 16, osl: 10, chat_template_kwargs: {enable_thinking: true}}],
		reasoning: [{reasoning_effort: "low"}, {reasoning_effort: "high"}],
		concurrency: [2], requests: 4, warmup: 0`, url), "")
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	rows := byID(c.cells)
	for _, tc := range []struct {
		id, label     string
		think, answer float64
		answered      float64
		thinkMs       float64
	}{
		{"sweep/16:120/c2/reasoning_effort=low", "reasoning_effort=low", 20, 100, 100, 20 * 2},
		{"sweep/16:120/c2/reasoning_effort=high", "reasoning_effort=high", 80, 40, 100, 80 * 2},
		{"sweep/16:10/c2/reasoning_effort=high,enable_thinking=true", "reasoning_effort=high,enable_thinking=true", 10, 0, 0, 0},
	} {
		r, ok := rows[tc.id]
		if !ok {
			t.Fatalf("no row %s among %v", tc.id, keys(rows))
		}
		if r.Status != results.StatusOK || r.Reasoning != tc.label {
			t.Errorf("%s: status %s (%s), reasoning %q, want ok and %q", tc.id, r.Status, r.Reason, r.Reasoning, tc.label)
		}
		if v(r.ReasoningTokensAvg) != tc.think || v(r.AnswerTokensAvg) != tc.answer || v(r.AnsweredPct) != tc.answered {
			t.Errorf("%s: reasoning %v answer %v tokens per request, answered %v%%; want %v, %v, %v%%",
				tc.id, v(r.ReasoningTokensAvg), v(r.AnswerTokensAvg), v(r.AnsweredPct), tc.think, tc.answer, tc.answered)
		}
		if tc.answered == 0 {
			if r.TTFOP50Ms != nil || !strings.Contains(r.Notes, "4 produced no answer") {
				t.Errorf("%s: ttfo %v, notes %q: want NULL and the unanswered said", tc.id, r.TTFOP50Ms, r.Notes)
			}
			continue
		}
		// A difference of two medians of 4: the simulator times every
		// token from the request's start, so a first token woken late
		// (the test's client and simulator share two cores) shortens the
		// distance to the first answer token (158.8 ms for 160 once in CI,
		// on a quiet machine).
		if d := v(r.TTFOP50Ms) - v(r.TTFTP50Ms); d < tc.thinkMs-3 || d > tc.thinkMs+20 {
			// The simulator's wakes are late beside busy neighbours: a
			// claim about a quiet machine (machinetest).
			msg := fmt.Sprintf("%s: ttfo p50 %.1f ms is %.1f ms after ttft p50, want the thinking's %.0f", tc.id, v(r.TTFOP50Ms), d, tc.thinkMs)
			t.Log(msg)
			machine.Judge(t, "the thinking phase's length read within 3 ms below and 20 ms above")
			t.Error(msg)
		}
		if !strings.Contains(r.Notes, "reasoning tokens from the usage's completion_tokens_details.reasoning_tokens for 4") {
			t.Errorf("%s: notes %q do not say where the reasoning counts came from", tc.id, r.Notes)
		}
	}
}

func keys(m map[string]results.Cell) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestReasoningRefusedOffChat: vet refuses a reasoning control, at its
// field, on an endpoint that cannot carry it.
func TestReasoningRefusedOffChat(t *testing.T) {
	for _, tc := range []struct{ cue, want string }{
		{`kind: "sweep", target: "http://x", reasoning_effort: "low"`, `stages.sweep.reasoning_effort: a reasoning control applies to endpoint "chat", "responses" only, not "completions"`},
		{`kind: "sweep", target: "http://x", endpoint: "embeddings", cells: [{isl: 8, osl: 1, think: false}]`, `stages.sweep.cells.0.think: a reasoning control applies to endpoint "chat", "responses" only, not "embeddings"`},
		{`kind: "sweep", target: "http://x", reasoning: [{chat_template_kwargs: {enable_thinking: false}}]`, `stages.sweep.reasoning.0.chat_template_kwargs: a reasoning control`},
	} {
		st, p := loadStage(t, tc.cue, "")
		err := st.Validate(check(t, p))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "plan.cue:") {
			t.Errorf("%s: err = %v, want %q at its position", tc.cue, err, tc.want)
		}
	}
	st, p := loadStage(t, `kind: "sweep", target: "http://x", endpoint: "chat", think: false, reasoning: [{reasoning_effort: "low"}]`, "")
	if err := st.Validate(check(t, p)); err != nil {
		t.Errorf("chat with reasoning controls: %v", err)
	}
}
