package loadgen

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine/machinetest"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/stats"
)

// TestAPIToolCallsAgainstSimulator is issue 48's tool-call check over the
// Responses and Messages APIs: the plan's chat-shaped tools go out in
// each API's shape, the simulator answers with its call events (a
// function_call item and its arguments deltas; a tool_use block and its
// input_json_delta pieces; Ollama's whole call in one delta; a whole
// answer's call item or block), and over 500 requests with 10 % of the
// calls cut short and 10 % schema-invalid the client's counts match what
// the simulator planned, request by request, so its rates read within
// ±3 points of 10 %.
func TestAPIToolCallsAgainstSimulator(t *testing.T) {
	for _, ep := range []Endpoint{Responses, Messages} {
		for _, tc := range []struct {
			name, persona string
			stream        bool
		}{
			{"vllm/stream", sim.PersonaVLLM, true},
			{"ollama/stream", sim.PersonaOllama, true},
			{"vllm/whole", sim.PersonaVLLM, false},
		} {
			t.Run(string(ep)+"/"+tc.name, func(t *testing.T) {
				rs, recs := runCheckedOn(t, ep, func(c *sim.Config) {
					if err := sim.ApplyPersonality(c, tc.persona); err != nil {
						t.Fatal(err)
					}
					c.Tools = sim.Tools{InvalidJSONRate: 0.1, SchemaInvalidRate: 0.1}
				}, tc.stream, toolsCheck(t), 500, map[string]any{"tools": json.RawMessage(testTools)}, 64)
				var calls, js, valid int
				for i, r := range rs {
					rec := recs[i]
					want := map[string][2]int{sim.PlannedValid: {1, 1}, sim.PlannedInvalidJSON: {0, 0}, sim.PlannedSchemaInvalid: {1, 0}}[rec.Planned]
					c := r.Check
					if !c.ToolsOffered || c.ToolCalls != 1 || c.ToolCallsJSON != want[0] || c.ToolCallsValid != want[1] || rec.ToolName != "get_weather" {
						t.Fatalf("%s: planned %s (%s %q): client read %+v", r.ResponseID, rec.Planned, rec.ToolName, rec.ConstrainedText, c)
					}
					if _, ok := r.TTFO(); !ok || !r.sawKind(EventToolCall) || r.sawKind(EventAnswer) {
						t.Fatalf("%s: a call's events are tool-call events, the answer's first: %+v", r.ResponseID, r.Tokens)
					}
					if tc.stream && tc.persona == sim.PersonaOllama && len(r.Tokens) != 1 {
						t.Fatalf("%s: Ollama's whole call came in %d events", r.ResponseID, len(r.Tokens))
					}
					calls, js, valid = calls+c.ToolCalls, js+c.ToolCallsJSON, valid+c.ToolCallsValid
				}
				notJSON := 100 * float64(calls-js) / float64(calls)
				invalid := 100 * float64(js-valid) / float64(calls)
				t.Logf("%d calls: %.1f %% not JSON, %.1f %% schema-invalid (planned 10 %% each)", calls, notJSON, invalid)
				if math.Abs(notJSON-10) > 3 || math.Abs(invalid-10) > 3 {
					t.Errorf("rates %.1f %% and %.1f %%, want 10 ± 3", notJSON, invalid)
				}
			})
		}
	}
}

// TestAPIToolCallsExactRates: over both APIs, at 0 % and 100 % invalid
// the counts are exact, and a call forced by the plan's (chat-shaped)
// tool_choice names the forced tool: the choice reached the simulator in
// the API's shape.
func TestAPIToolCallsExactRates(t *testing.T) {
	forced := map[string]any{"type": "function", "function": map[string]string{"name": "now"}}
	for _, ep := range []Endpoint{Responses, Messages} {
		for _, tc := range []struct {
			name            string
			rates           sim.Tools
			choice          any
			wantJSON, valid int
			tool            string
		}{
			{"all valid", sim.Tools{}, nil, 1, 1, "get_weather"},
			{"all cut", sim.Tools{InvalidJSONRate: 1}, nil, 0, 0, "get_weather"},
			{"all schema-invalid", sim.Tools{SchemaInvalidRate: 1}, "required", 1, 0, "get_weather"},
			{"forced", sim.Tools{}, forced, 1, 1, "now"},
		} {
			t.Run(string(ep)+"/"+tc.name, func(t *testing.T) {
				b := map[string]any{"tools": json.RawMessage(testTools)}
				if tc.choice != nil {
					b["tool_choice"] = tc.choice
				}
				for _, stream := range []bool{true, false} {
					rs, recs := runCheckedOn(t, ep, func(c *sim.Config) { c.Tools = tc.rates }, stream, toolsCheck(t), 40, b, 64)
					for i, r := range rs {
						c := r.Check
						if c.ToolCalls != 1 || c.ToolCallsJSON != tc.wantJSON || c.ToolCallsValid != tc.valid || recs[i].ToolName != tc.tool {
							t.Fatalf("stream %v: %s: %+v (tool %s), want 1 call of %s, %d JSON, %d valid", stream, r.ResponseID, c, recs[i].ToolName, tc.tool, tc.wantJSON, tc.valid)
						}
						if !r.OK() || r.OutputTokens == 0 {
							t.Fatalf("%s: a tool call is an ok request with its tokens: %v, %d tokens", r.ResponseID, r.Err, r.OutputTokens)
						}
					}
				}
			})
		}
	}
}

// TestAPIStructuredOutputAgainstSimulator: the plan's response_format
// goes out as the Responses API's text.format and the Messages API's
// output_config.format; answers, 10 % cut short, read within ±3 points
// over 500 requests and exactly per request, streamed and whole; 0 % and
// 100 % exactly; json_object as any object.
func TestAPIStructuredOutputAgainstSimulator(t *testing.T) {
	rf := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "person", "schema": json.RawMessage(testSchema), "strict": true}}
	for _, ep := range []Endpoint{Responses, Messages} {
		for _, tc := range []struct {
			name   string
			rf     map[string]any
			stream bool
			rate   float64
			n      int
		}{
			{"stream", rf, true, 0.1, 500},
			{"whole", rf, false, 0.1, 500},
			{"all valid", rf, true, 0, 40},
			{"all cut", rf, true, 1, 40},
			{"json_object", map[string]any{"type": "json_object"}, true, 0, 40},
		} {
			t.Run(string(ep)+"/"+tc.name, func(t *testing.T) {
				check := formatCheck(t)
				if tc.rf["type"] == "json_object" {
					check = nil // any object; checked below by hand
				}
				rs, recs := runCheckedOn(t, ep, func(c *sim.Config) { c.Tools.FormatInvalidRate = tc.rate }, tc.stream, check, tc.n, map[string]any{"response_format": tc.rf}, 64)
				bad := 0
				for i, r := range rs {
					c, rec := r.Check, recs[i]
					if check == nil {
						if rec.Planned != sim.PlannedValid || !strings.HasPrefix(rec.ConstrainedText, "{") {
							t.Fatalf("%s: json_object answered %s %q", r.ResponseID, rec.Planned, rec.ConstrainedText)
						}
						continue
					}
					want := rec.Planned == sim.PlannedValid
					if !c.FormatAsked || c.AnswerValid != want || c.AnswerJSON != want || c.ToolCalls != 0 {
						t.Fatalf("%s: planned %s (%q): client read %+v", r.ResponseID, rec.Planned, rec.ConstrainedText, c)
					}
					if !want {
						bad++
					}
				}
				if check == nil {
					return
				}
				got := 100 * float64(bad) / float64(len(rs))
				t.Logf("%.1f %% invalid (planned %.0f %%)", got, 100*tc.rate)
				if tol := map[bool]float64{true: 3, false: 0}[tc.rate > 0 && tc.rate < 1]; math.Abs(got-100*tc.rate) > tol {
					t.Errorf("%.1f %% invalid, want %.0f ± %.0f", got, 100*tc.rate, tol)
				}
			})
		}
	}
}

// TestAPIConstraintsWire: the chat-shaped tools, tool_choice and
// response_format a plan gives are sent in each API's own shape (as
// openai-python's and anthropic-sdk-python's types and Ollama v0.17.4's
// openai/responses.go and anthropic/anthropic.go read them), and the
// target's shared values are left as they were.
func TestAPIConstraintsWire(t *testing.T) {
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "f", "description": "d", "parameters": map[string]any{"type": "object"}}}}
	rf := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "p", "schema": map[string]any{"type": "object"}, "strict": true}}
	for _, tc := range []struct {
		ep     Endpoint
		choice any
		want   string
	}{
		{Responses, map[string]any{"type": "function", "function": map[string]any{"name": "f"}},
			`"text":{"format":{"name":"p","schema":{"type":"object"},"strict":true,"type":"json_schema"}},"tool_choice":{"name":"f","type":"function"},"tools":[{"description":"d","name":"f","parameters":{"type":"object"},"type":"function"}]`},
		{Responses, "required", `"tool_choice":"required"`},
		{Messages, map[string]any{"type": "function", "function": map[string]any{"name": "f"}},
			`"output_config":{"format":{"schema":{"type":"object"},"type":"json_schema"}},"stream":true,"tool_choice":{"name":"f","type":"tool"},"tools":[{"description":"d","input_schema":{"type":"object"},"name":"f"}]`},
		{Messages, "required", `"tool_choice":{"type":"any"}`},
		{Messages, "none", `"tool_choice":{"type":"none"}`},
	} {
		tg := &Target{Model: "m", Endpoint: tc.ep, Stream: true, ExtraBody: map[string]any{"tools": tools, "tool_choice": tc.choice, "response_format": rf}}
		b, _, err := tg.body(Request{Prompt: "hi", MaxTokens: 8})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), tc.want) || strings.Contains(string(b), "response_format") {
			t.Errorf("%s %v: body %s\nwant it to hold %s", tc.ep, tc.choice, b, tc.want)
		}
		if _, ok := tools[0].(map[string]any)["function"]; !ok || tg.ExtraBody["response_format"] == nil {
			t.Errorf("%s: the target's shared values were changed", tc.ep)
		}
	}
}

// TestAPICallEvents: the calls' opening events and their argument pieces
// are joined per call by their index, whatever else streams between
// them; a whole answer's call items and blocks are calls too.
func TestAPICallEvents(t *testing.T) {
	for _, tc := range []struct {
		name   string
		scan   func([]byte) (chunkInfo, error)
		events []string
	}{
		{"responses", scanResponsesEvent, []string{
			`{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","name":"get_weather","arguments":""}}`,
			`{"type":"response.function_call_arguments.delta","output_index":0,"delta":"{\"city\": \"Os"}`,
			`{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","name":"now","arguments":"{\"tz\":\"UTC\"}"}}`,
			`{"type":"response.function_call_arguments.delta","output_index":0,"delta":"lo\", \"days\": 3}"}`,
			`{"type":"response.function_call_arguments.done","output_index":0,"arguments":"{\"city\": \"Oslo\", \"days\": 3}"}`,
			`{"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","name":"now","arguments":""}}`,
			`{"type":"response.function_call_arguments.delta","output_index":2,"delta":"{\"tz\": 1"}`,
		}},
		{"messages", scanMessagesEvent, []string{
			`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"a","name":"get_weather","input":{}}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Os"}}`,
			`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"b","name":"now","input":{"tz":"UTC"}}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"lo\", \"days\": 3}"}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"c","name":"now","input":{}}}`,
			`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"tz\": 1"}}`,
		}},
	} {
		res := Result{answers: newAnswerAcc(toolsCheck(t))}
		for _, e := range tc.events {
			c, err := tc.scan([]byte(e))
			if err != nil {
				t.Fatalf("%s: scan %s: %v", tc.name, e, err)
			}
			if c.HasText && kindOf(&c) != EventToolCall {
				t.Fatalf("%s: %s is a %s event", tc.name, e, kindOf(&c))
			}
			res.noteAnswer(&c)
		}
		res.answers.finish(&res)
		if c := res.Check; c.ToolCalls != 3 || c.ToolCallsJSON != 2 || c.ToolCallsValid != 2 || c.Invalid == "" {
			t.Errorf("%s: read %+v, want 3 calls, 2 JSON, 2 valid and a reason", tc.name, c)
		}
	}
	for _, body := range []string{
		`{"id":"r","status":"completed","output":[{"type":"function_call","name":"get_weather","arguments":"{\"city\":\"Oslo\",\"days\":2}"},{"type":"function_call","name":"now","arguments":"{\"tz\""}],"usage":{"input_tokens":3,"output_tokens":9}}`,
		`{"id":"m","type":"message","content":[{"type":"tool_use","id":"a","name":"get_weather","input":{"city":"Oslo","days":2}},{"type":"tool_use","id":"b","name":"now","input":"{\"tz\""}],"usage":{"input_tokens":3,"output_tokens":9}}`,
	} {
		tg := &Target{Endpoint: Responses, Check: toolsCheck(t)}
		res := Result{answers: newAnswerAcc(tg.Check)}
		if err := tg.readWholeAPI([]byte(body), res.Sent, Request{}, &res); err != nil {
			t.Fatal(err)
		}
		res.answers.finish(&res)
		if c := res.Check; c.ToolCalls != 2 || c.ToolCallsJSON != 1 || c.ToolCallsValid != 1 || len(res.Tokens) != 1 || res.Tokens[0].Kind != EventToolCall {
			t.Errorf("whole %s: read %+v, events %+v", body[:12], c, res.Tokens)
		}
	}
}

// TestMessagesThinkingBudget: the Messages API's thinking {type:
// "enabled", budget_tokens: N} stops the simulator's 200-token thinking
// at N and the answer follows (reasoning tokens exactly N, answered, the
// answer's first token right after the N-th); a budget the max_tokens
// cuts first leaves no answer: the request is flagged unanswered.
func TestMessagesThinkingBudget(t *testing.T) {
	srv, url := startSim(t, func(c *sim.Config) {
		c.TTFT, c.ITL = time.Millisecond, 100*time.Microsecond
		c.Reasoning = sim.Reasoning{Tokens: 200}
	})
	for _, tc := range []struct {
		budget, maxTokens, reasoning int
		answered                     bool
	}{
		{64, 100, 64, true},
		{1024, 100, 100, false}, // the budget is over max_tokens: thinking ends the request
		{0, 300, 200, true},     // no budget: the planned thinking
	} {
		tg := newTarget(url, 1)
		tg.Endpoint, tg.Stream = Messages, true
		body := map[string]any{"ignore_eos": true}
		if tc.budget > 0 {
			body["thinking"] = map[string]any{"type": "enabled", "budget_tokens": tc.budget}
		}
		r := tg.Do(context.Background(), Request{Prompt: "think", MaxTokens: tc.maxTokens, Body: body})
		tg.HTTP.CloseIdleConnections()
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		rec, _ := srv.Record(r.ResponseID)
		if r.ReasoningTokens != tc.reasoning || rec.ReasoningTokens != tc.reasoning || r.Answered() != tc.answered || r.AnswerTokens != tc.maxTokens-tc.reasoning {
			t.Errorf("budget %d, max_tokens %d: reasoning %d (simulator %d), answer %d, answered %v; want %d, %d, %v",
				tc.budget, tc.maxTokens, r.ReasoningTokens, rec.ReasoningTokens, r.AnswerTokens, r.Answered(), tc.reasoning, tc.maxTokens-tc.reasoning, tc.answered)
		}
		if tc.answered && (len(r.Tokens) <= tc.reasoning || r.Tokens[tc.reasoning].Kind != EventAnswer || r.Tokens[tc.reasoning-1].Kind != EventReasoning) {
			t.Errorf("budget %d: the answer does not start after the %d-th token event", tc.budget, tc.reasoning)
		}
	}
}

// TestTTFTCAgainstSimulator: the time to the first tool-call token is
// the event that carries the simulator's first call token, after its
// 20-token thinking phase, over chat, the Responses and the Messages
// APIs: the same event as the first answer token (the answer is the
// call), never before the simulator wrote it, within the client's
// stamp error of that write; a request that made no call has none.
func TestTTFTCAgainstSimulator(t *testing.T) {
	srv, url := startSim(t, func(c *sim.Config) {
		c.TTFT, c.ITL = 5*time.Millisecond, time.Millisecond
		c.Reasoning = sim.Reasoning{Tokens: 20}
	})
	machine := machinetest.Start()
	for _, ep := range []Endpoint{Chat, Responses, Messages} {
		tg := newTarget(url, 4)
		tg.Endpoint, tg.Stream, tg.Check = ep, true, toolsCheck(t)
		var excess []float64
		for i := range 20 {
			r := tg.Do(context.Background(), Request{Prompt: "call a tool " + itoa(i), MaxTokens: 64, Body: map[string]any{"tools": json.RawMessage(testTools)}})
			if r.Err != nil {
				t.Fatalf("%s: %v", ep, r.Err)
			}
			rec, _ := srv.Record(r.ResponseID)
			c, okc := r.TTFTC()
			o, oko := r.TTFO()
			if !okc || !oko || c != o || rec.ReasoningTokens != 20 {
				t.Fatalf("%s: ttftc %v (%v), ttfo %v (%v), simulator reasoning %d: want the same event after 20 reasoning tokens", ep, c, okc, o, oko, rec.ReasoningTokens)
			}
			// The simulator's event carrying token 20 (one token per event).
			wrote := rec.Events[20].Time.Sub(rec.Received)
			d := float64(c-wrote) / float64(time.Millisecond)
			if d < -0.5 {
				t.Fatalf("%s: ttftc %v before the simulator wrote the call at %v", ep, c, wrote)
			}
			excess = append(excess, d)
		}
		tg.HTTP.CloseIdleConnections()
		s := stats.Summarize(excess)
		t.Logf("%s: ttftc over the simulator's write of the first call token: p50 %.3f ms, max %.3f", ep, s.P50, s.Max)
		if s.P50 > 5 {
			machine.Judge(t, "the client reading the simulator's writes at once")
			t.Errorf("%s: ttftc p50 %.3f ms after the simulator's write (bound 5)", ep, s.P50)
		}
	}
	tg := newTarget(url, 1)
	tg.Endpoint, tg.Stream = Messages, true
	if r := tg.Do(context.Background(), Request{Prompt: "no tools", MaxTokens: 30}); r.Err != nil || !r.Answered() {
		t.Fatalf("no tools: %v", r.Err)
	} else if _, ok := r.TTFTC(); ok {
		t.Errorf("a request without a call has a ttftc")
	}
	tg.HTTP.CloseIdleConnections()
}

// TestLlamaServerAPIEvents: llama-server's Responses events carry no
// output_index and no sequence_number (tools/server/server-task.cpp: a
// call's arguments deltas name their item by item_id alone), so a call's
// pieces join the call opened before them; its Messages events are
// Anthropic's. Every call read as the simulator planned it.
func TestLlamaServerAPIEvents(t *testing.T) {
	srv, url := startSim(t, func(c *sim.Config) {
		if err := sim.ApplyPersonality(c, sim.PersonaLlamaServer); err != nil {
			t.Fatal(err)
		}
		c.TTFT, c.ITL = time.Millisecond, 0
		c.Reasoning = sim.Reasoning{Tokens: 4}
		c.Tools = sim.Tools{InvalidJSONRate: 0.2, SchemaInvalidRate: 0.2}
		// The events are this test's subject, not llama-server's close
		// after each stream: on a loaded machine its FIN can come after
		// the next request went out on the pooled connection, past the
		// resend window, on chat as on these APIs.
		c.CloseAfterStream = false
	})
	for _, ep := range []Endpoint{Responses, Messages} {
		tg := newTarget(url, 1)
		tg.Endpoint, tg.Stream, tg.Check = ep, true, toolsCheck(t)
		for i := range 30 {
			r := tg.Do(context.Background(), Request{Prompt: "weather " + itoa(i), MaxTokens: 64, Body: map[string]any{"tools": json.RawMessage(testTools)}})
			if r.Err != nil {
				t.Fatalf("%s: %v", ep, r.Err)
			}
			rec, _ := srv.Record(r.ResponseID)
			want := map[string][2]int{sim.PlannedValid: {1, 1}, sim.PlannedInvalidJSON: {0, 0}, sim.PlannedSchemaInvalid: {1, 0}}[rec.Planned]
			if c := r.Check; c.ToolCalls != 1 || c.ToolCallsJSON != want[0] || c.ToolCallsValid != want[1] || r.ReasoningTokens != 4 {
				t.Fatalf("%s: planned %s %q: read %+v, %d reasoning tokens", ep, rec.Planned, rec.ConstrainedText, c, r.ReasoningTokens)
			}
		}
		tg.HTTP.CloseIdleConnections()
	}
}
