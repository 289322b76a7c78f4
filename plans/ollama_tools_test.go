package plans_test

import (
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// TestOllamaTools runs plans/testdata/ollama-tools.cue on Ollama v0.17.4:
// a forced tool call (a json_schema grammar in the call's shape, Ollama's
// tool parser sending the whole call in one event with its ~70 tokens)
// is an ok request with its call counted, its arguments valid against
// the tool's schema, 100 % exactly; a json_schema answer on the model that
// does not think reads 100 % valid, whitespace deltas and all. The forced
// call goes over the Responses API too (function_call item, one arguments
// delta); the Messages API takes the tools in its shape and answers text.
func TestOllamaTools(t *testing.T) {
	dir := ollamaDir(t)
	modelPresent(t)
	b := startBenchrun(t, dir, "testdata/ollama-tools.cue")
	if code := b.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, b.stderr.String())
	}
	byStage := map[string]results.Cell{}
	for _, c := range readCells(t, b.runDir(t)) {
		byStage[c.Stage] = c
	}
	structured := byStage["structured"]
	// The forced call over chat and over the Responses API alike.
	for _, stage := range []string{"tools", "tools_responses"} {
		tools := byStage[stage]
		if tools.Status != results.StatusOK || tools.Failed != 0 || tools.Completed != 8 || results.ValueOr(tools.ToolCallsMean, -1) != 1 ||
			results.ValueOr(tools.ToolArgsValidPct, -1) != 100 || results.ValueOr(tools.AnsweredPct, -1) != 100 {
			t.Errorf("%s: status %s (%s), %d completed, %d failed, %v calls per request, %v %% valid, %v %% answered; want ok, 8, 0, 1, 100, 100",
				stage, tools.Status, tools.Reason, tools.Completed, tools.Failed, results.ValueOr(tools.ToolCallsMean, -1), results.ValueOr(tools.ToolArgsValidPct, -1), results.ValueOr(tools.AnsweredPct, -1))
		}
	}
	// The Messages API's tools accepted (input_schema); nothing forces a
	// call there, so the text answers count 0 calls.
	if m := byStage["tools_messages"]; m.Status != results.StatusOK || m.Completed != 4 || results.ValueOr(m.ToolCallsMean, -1) != 0 || results.ValueOr(m.AnsweredPct, -1) != 100 {
		t.Errorf("tools_messages: status %s (%s), %d completed, %v calls per request, %v %% answered; want ok, 4, 0, 100",
			m.Status, m.Reason, m.Completed, results.ValueOr(m.ToolCallsMean, -1), results.ValueOr(m.AnsweredPct, -1))
	}
	if structured.Status != results.StatusOK || structured.Completed != 8 || results.ValueOr(structured.StructuredValidPct, -1) != 100 || structured.ToolCallsMean != nil {
		t.Errorf("structured: status %s (%s), %d completed, %v %% valid, tool calls %v; want ok, 8, 100, NULL",
			structured.Status, structured.Reason, structured.Completed, results.ValueOr(structured.StructuredValidPct, -1), structured.ToolCallsMean)
	}
}
