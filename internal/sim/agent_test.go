package sim

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestAgentSessionSteps plays agent sessions by hand over HTTP: each
// session's steps end in a call until the step its first user message
// planned (AgentSteps), then in a final answer; the records say each
// request's step, and the cached prompt tokens grow from step to step
// (each step's prompt is the step before's plus its call and result).
func TestAgentSessionSteps(t *testing.T) {
	cfg := fastConfig()
	if err := ApplyPersonality(&cfg, "vllm"); err != nil {
		t.Fatal(err)
	}
	cfg.PromptCache, cfg.Engine.BlockSize = true, 16
	cfg.Tools.AgentSteps = 6
	s, url := startSim(t, cfg)
	c := testClient()
	tools := []any{map[string]any{"type": "function", "function": map[string]any{
		"name": "search", "parameters": map[string]any{"type": "object",
			"properties": map[string]any{"q": map[string]any{"type": "string"}}, "required": []string{"q"}}}}}
	seen := map[int]bool{}
	for session := range 12 {
		first := fmt.Sprintf("session %d: find the answer to question %d with the search tool, then say it in one line", session, session*7)
		want := AgentSteps(first, 6)
		seen[want] = true
		msgs := []any{map[string]any{"role": "user", "content": first}}
		lastCached := -1
		for step := 1; ; step++ {
			if step > 6 {
				t.Fatalf("session %d: more than 6 steps", session)
			}
			resp, body := postJSON(t, c, url+"/v1/chat/completions", map[string]any{
				"model": "sim-llama", "messages": msgs, "tools": tools, "max_tokens": 64})
			if resp.StatusCode != 200 {
				t.Fatalf("session %d step %d: %d %s", session, step, resp.StatusCode, body)
			}
			var out struct {
				ID      string `json:"id"`
				Choices []struct {
					FinishReason string `json:"finish_reason"`
					Message      struct {
						Content   *string `json:"content"`
						ToolCalls []struct {
							Function struct {
								Name      string `json:"name"`
								Arguments string `json:"arguments"`
							} `json:"function"`
						} `json:"tool_calls"`
					} `json:"message"`
				} `json:"choices"`
				Usage struct {
					Details struct {
						Cached int `json:"cached_tokens"`
					} `json:"prompt_tokens_details"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(body, &out); err != nil {
				t.Fatal(err)
			}
			rec, ok := s.Record(out.ID)
			if !ok || rec.AgentStep != step || rec.AgentSteps != want {
				t.Fatalf("session %d step %d: record step %d of %d, want %d of %d", session, step, rec.AgentStep, rec.AgentSteps, step, want)
			}
			if step > 1 && out.Usage.Details.Cached <= lastCached {
				t.Errorf("session %d step %d: cached tokens %d, not above step %d's %d", session, step, out.Usage.Details.Cached, step-1, lastCached)
			}
			lastCached = out.Usage.Details.Cached
			calls := out.Choices[0].Message.ToolCalls
			if step == want {
				if len(calls) != 0 || out.Choices[0].FinishReason == "tool_calls" {
					t.Fatalf("session %d: step %d of %d called a tool (%s)", session, step, want, body)
				}
				break
			}
			if len(calls) != 1 || calls[0].Function.Name != "search" || calls[0].Function.Arguments != `{"q":"aaaaa"}` {
				t.Fatalf("session %d step %d of %d: calls %+v, want one search call with known arguments", session, step, want, calls)
			}
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
					"id": "c1", "type": "function", "function": map[string]any{"name": "search", "arguments": calls[0].Function.Arguments}}}},
				map[string]any{"role": "tool", "tool_call_id": "c1", "content": "the search found forty two results about the question"})
		}
	}
	if len(seen) < 4 {
		t.Errorf("12 sessions planned only %d distinct step counts: %v", len(seen), seen)
	}
}
