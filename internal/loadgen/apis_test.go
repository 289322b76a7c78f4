package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine/machinetest"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/stats"
)

// TestAPIsAgainstSimulator: the Responses and Messages APIs read as chat
// is. A 200-token thinking phase at 5 ms a token after a 20 ms TTFT, then
// 24 answer tokens: every token event's stamp within the client's stated
// error of the simulator's write (the bounds of
// TestMeasurementErrorAgainstSimulator: p50 0.5 ms at concurrency 1, 1 ms
// at 16), ttft and time to first answer token beyond the simulator's own
// only by the request's trip (2 ms, 10 ms p50), the event count, output,
// input, reasoning and answer tokens exact per request; Responses under
// vLLM's reasoning_text events with usage's reasoning_tokens (the generic
// persona) and under Ollama's reasoning_summary_text events whose usage
// says 0 (counted from the events), Messages' thinking blocks (no
// reasoning count in its usage: the events).
func TestAPIsAgainstSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("a thinking phase takes a second a request")
	}
	const reasoning, answer = 200, 24
	for _, api := range []struct {
		ep      Endpoint
		persona string
		source  string
	}{
		{Responses, "", ReasoningFromUsage},
		{Responses, sim.PersonaOllama, ReasoningFromEvents},
		{Messages, sim.PersonaVLLM, ReasoningFromEvents},
	} {
		for _, tc := range []struct {
			conc, requests int
			stampP50, trip float64 // ms
		}{{1, 2, 0.5, 2}, {16, 16, 1, 10}} {
			t.Run(string(api.ep)+"/"+api.persona+"/c"+itoa(tc.conc), func(t *testing.T) {
				machine := machinetest.Start()
				srv, url := startSim(t, func(c *sim.Config) {
					if api.persona != "" {
						if err := sim.ApplyPersonality(c, api.persona); err != nil {
							t.Fatal(err)
						}
						c.LoadTime = 0
					}
					c.TTFT, c.ITL, c.EOSProb = 20*time.Millisecond, 5*time.Millisecond, 0
					c.Reasoning = sim.Reasoning{Tokens: reasoning, ITL: 5 * time.Millisecond}
				})
				tg := newTarget(url, tc.conc)
				tg.Endpoint = api.ep
				defer tg.HTTP.CloseIdleConnections()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				var mu sync.Mutex
				var rs []Result
				RunClosed(ctx, tg, tc.conc, tc.requests, func(i int) Request {
					return Request{Prompt: "think about the fox " + itoa(i), MaxTokens: reasoning + answer, Body: map[string]any{"ignore_eos": true}}
				}, func(_ int, r Result) {
					mu.Lock()
					rs = append(rs, r)
					mu.Unlock()
				})
				var stamp, ttft, ttfo, abs, pl []float64
				for _, r := range rs {
					if r.Err != nil {
						t.Fatalf("request failed: %v", r.Err)
					}
					rec, ok := srv.Record(r.ResponseID)
					if !ok {
						t.Fatalf("no simulator record for %q", r.ResponseID)
					}
					if len(r.Tokens) != len(rec.Events) || r.OutputTokens != rec.CompletionTokens || r.OutputTokens != reasoning+answer ||
						r.InputTokens != rec.PromptTokens || r.InputTokens == 0 {
						t.Fatalf("%s: %d events, %d/%d tokens; the simulator wrote %d events, %d/%d", r.ResponseID,
							len(r.Tokens), r.InputTokens, r.OutputTokens, len(rec.Events), rec.PromptTokens, rec.CompletionTokens)
					}
					if r.ReasoningTokens != reasoning || r.AnswerTokens != answer || r.ReasoningSource != api.source || !r.Answered() {
						t.Fatalf("%s: reasoning %d (from %s) answer %d answered %v; want %d (from %s), %d", r.ResponseID,
							r.ReasoningTokens, r.ReasoningSource, r.AnswerTokens, r.Answered(), reasoning, api.source, answer)
					}
					for k, ev := range rec.Events {
						stamp = append(stamp, math.Abs(msf(r.Tokens[k].At.Sub(ev.Time))))
						if want := k >= reasoning; r.Tokens[k].Kind.Answer() != want {
							t.Fatalf("%s: event %d is %v", r.ResponseID, k, r.Tokens[k].Kind)
						}
					}
					ttft = append(ttft, msf(r.TTFT())-msf(rec.Events[0].Time.Sub(rec.Received)))
					d, _ := r.TTFO()
					// The plan: the simulator's TTFT for this request (20 ms,
					// less where Ollama's slot cache held the prompt), then
					// 200 reasoning tokens at 5 ms.
					abs = append(abs, msf(d)-msf(rec.PlannedTTFT+reasoning*5*time.Millisecond))
					pl = append(pl, msf(d))
					ttfo = append(ttfo, msf(d)-msf(rec.Events[reasoning].Time.Sub(rec.Received)))
				}
				s, tt, to, ab := stats.Summarize(stamp), stats.Summarize(ttft), stats.Summarize(ttfo), stats.Summarize(abs)
				t.Logf("%s c=%d: |client - server| p50 %.3f ms p99 %.3f; ttft excess p50 %.3f ms; ttfo p50 %.3f ms (planned 20 + 200×5 = 1020 without a cached prompt), over the plan p50 %.3f ms, over the simulator's own write p50 %.3f ms",
					api.ep, tc.conc, s.P50, s.P99, tt.P50, stats.Summarize(pl).P50, ab.P50, to.P50)
				if ab.P50 < 0 {
					t.Errorf("ttfo p50 %.3f ms before the plan", -ab.P50)
				}
				if ab.P50 > tc.trip+5 {
					// The simulator's own writes ran late: a claim about a
					// quiet machine (the client's error is the excess over
					// those writes, checked above whatever the machine).
					machine.Judge(t, "the simulator's writes on their plan")
					t.Errorf("ttfo p50 %.3f ms over the plan (bound %.0f)", ab.P50, tc.trip+5)
				}
				if s.P50 > tc.stampP50 {
					t.Errorf("stamp error p50 %.3f ms (bound %.1f)", s.P50, tc.stampP50)
				}
				for name, e := range map[string]stats.Summary{"ttft": tt, "ttfo": to} {
					if e.P50 < 0 || e.P50 > tc.trip {
						t.Errorf("%s excess over the simulator's own p50 %.3f ms (bound %.0f)", name, e.P50, tc.trip)
					}
				}
			})
		}
	}
}

// TestAPIsBudgetCut: a budget the thinking uses up ends the request ok,
// unanswered, every token reasoning, on either API, streamed or whole.
func TestAPIsBudgetCut(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) {
		c.TTFT, c.ITL = time.Millisecond, 100*time.Microsecond
		c.Reasoning = sim.Reasoning{Tokens: 50}
	})
	for _, ep := range []Endpoint{Responses, Messages} {
		for _, stream := range []bool{true, false} {
			tg := newTarget(url, 1)
			tg.Endpoint, tg.Stream = ep, stream
			r := tg.Do(context.Background(), Request{Prompt: "think", MaxTokens: 20})
			if r.Err != nil {
				t.Fatalf("%s stream=%v: %v", ep, stream, r.Err)
			}
			if r.Answered() || r.AnswerTokens != 0 || r.OutputTokens != 20 {
				t.Errorf("%s stream=%v: answered %v, answer %d, output %d; want unanswered, 0, 20", ep, stream, r.Answered(), r.AnswerTokens, r.OutputTokens)
			}
			// A whole Messages answer does not say how many tokens it
			// thought; every other reading counts all 20.
			if want := 20; r.ReasoningSource != ReasoningUnknown && r.ReasoningTokens != want {
				t.Errorf("%s stream=%v: reasoning %d (from %s), want %d", ep, stream, r.ReasoningTokens, r.ReasoningSource, want)
			}
		}
	}
}

// TestAPIsWhole: a non-streamed answer's usage and split: Responses'
// usage counts the reasoning; Messages' does not (ReasoningUnknown).
func TestAPIsWhole(t *testing.T) {
	srv, url := startSim(t, func(c *sim.Config) {
		c.TTFT, c.ITL = time.Millisecond, 100*time.Microsecond
		c.Reasoning = sim.Reasoning{Tokens: 30}
	})
	for _, tc := range []struct {
		ep              Endpoint
		reasoning       int
		source          string
		answer, answer2 int
	}{
		{Responses, 30, ReasoningFromUsage, 10, 10},
		{Messages, 0, ReasoningUnknown, 0, 10},
	} {
		tg := newTarget(url, 1)
		tg.Endpoint, tg.Stream = tc.ep, false
		r := tg.Do(context.Background(), Request{Prompt: "think hard", MaxTokens: 40, Body: map[string]any{"ignore_eos": true}, KeepText: true})
		if r.Err != nil {
			t.Fatalf("%s: %v", tc.ep, r.Err)
		}
		rec, _ := srv.Record(r.ResponseID)
		if r.OutputTokens != 40 || r.InputTokens != rec.PromptTokens || r.ReasoningTokens != tc.reasoning || r.ReasoningSource != tc.source || r.AnswerTokens != tc.answer || !r.Answered() {
			t.Errorf("%s: %d/%d tokens (simulator %d in), reasoning %d from %s, answer %d, answered %v", tc.ep, r.InputTokens, r.OutputTokens, rec.PromptTokens,
				r.ReasoningTokens, r.ReasoningSource, r.AnswerTokens, r.Answered())
		}
		if n := len(strings.Fields(r.Text)); n != 10 {
			t.Errorf("%s: answer text of %d words, want the 10 answer tokens' (reasoning is no part of it)", tc.ep, n)
		}
	}
}

// TestAPIsErrors: the API's own error shapes read as failed requests with
// the server's message: a stream's error event (Messages' error,
// Responses' response.failed) after 3 tokens, and an HTTP error in
// Anthropic's {"type":"error","error":{...}} shape.
func TestAPIsErrors(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL = time.Millisecond, 100*time.Microsecond })
	for _, ep := range []Endpoint{Responses, Messages} {
		tg := newTarget(url, 1)
		tg.Endpoint = ep
		tg.Headers = map[string]string{sim.FaultHeader: "stream-error=3"}
		r := tg.Do(context.Background(), Request{Prompt: "fail", MaxTokens: 10, Body: map[string]any{"ignore_eos": true}})
		var se *StreamError
		if !errors.As(r.Err, &se) || !strings.Contains(se.Message, "failed mid-stream") || r.OK() {
			t.Errorf("%s: err %v after %d events, want the stream's error event with the server's message", ep, r.Err, len(r.Tokens))
		}
		tg.Headers = map[string]string{sim.FaultHeader: "error=429"}
		r = tg.Do(context.Background(), Request{Prompt: "fail", MaxTokens: 10})
		var he *HTTPError
		if !errors.As(r.Err, &he) || he.Status != 429 || he.Body == "" || strings.HasPrefix(he.Body, "{") {
			t.Errorf("%s: err %v, want a 429 with the server's message", ep, r.Err)
		}
	}
}

// TestAPIBodies: the bodies and headers each API is sent: Responses'
// input, max_output_tokens and reasoning.effort (the plan's
// reasoning_effort moved to its form); Messages' messages without the
// system message (in system), max_tokens (always: the API requires it),
// anthropic-version and x-api-key beside Authorization; rerank's query,
// documents and top_n.
func TestAPIBodies(t *testing.T) {
	var mu sync.Mutex
	var body map[string]any
	var hdr http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		body, hdr = nil, r.Header.Clone()
		_ = json.Unmarshal(b, &body)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/rerank":
			io.WriteString(w, `{"id":"r","results":[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":0.1}],"usage":{"total_tokens":12}}`)
		case "/v1/messages":
			io.WriteString(w, `{"id":"m","type":"message","model":"x","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":5,"cache_read_input_tokens":3,"output_tokens":1}}`)
		default:
			io.WriteString(w, `{"id":"r","object":"response","model":"x","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}],"usage":{"input_tokens":8,"output_tokens":1}}`)
		}
	}))
	defer srv.Close()
	get := func(ep Endpoint, req Request, extra map[string]any) (map[string]any, http.Header, Result) {
		tg := &Target{BaseURL: srv.URL, Model: "m", Endpoint: ep, APIKey: "sk-secret", ExtraBody: extra}
		r := tg.Do(context.Background(), req)
		mu.Lock()
		defer mu.Unlock()
		return body, hdr, r
	}
	b, h, r := get(Responses, Request{Prompt: "hello", MaxTokens: 7}, map[string]any{"reasoning_effort": "low"})
	if b["input"] != "hello" || b["max_output_tokens"] != 7.0 || b["stream"] != false || b["max_tokens"] != nil || b["reasoning_effort"] != nil ||
		b["reasoning"].(map[string]any)["effort"] != "low" || h.Get("anthropic-version") != "" || r.Err != nil || r.InputTokens != 8 {
		t.Errorf("responses: body %v, anthropic-version %q, err %v, input %d", b, h.Get("anthropic-version"), r.Err, r.InputTokens)
	}
	b, h, r = get(Messages, Request{Messages: []Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}}, map[string]any{"reasoning_effort": "none"})
	msgs, _ := b["messages"].([]any)
	if len(msgs) != 1 || b["system"] != "be brief" || b["max_tokens"] != float64(messagesDefaultMaxTokens) || b["thinking"].(map[string]any)["type"] != "disabled" ||
		h.Get("anthropic-version") != AnthropicVersion || h.Get("x-api-key") != "sk-secret" || h.Get("Authorization") != "Bearer sk-secret" {
		t.Errorf("messages: body %v, headers %v", b, h)
	}
	if r.Err != nil || r.InputTokens != 8 || !r.CachedReported || r.CachedTokens != 3 || r.OutputTokens != 1 {
		t.Errorf("messages: err %v, %d in (%d cached), %d out; want 8 (input 5 + cache reads 3), 3, 1", r.Err, r.InputTokens, r.CachedTokens, r.OutputTokens)
	}
	b, _, r = get(Rerank, Request{Prompt: "q", Inputs: []string{"a", "b"}, TopN: 2}, nil)
	if b["query"] != "q" || len(b["documents"].([]any)) != 2 || b["top_n"] != 2.0 || b["stream"] != nil || r.Err != nil || r.Documents != 2 || r.InputTokens != 12 {
		t.Errorf("rerank: body %v, err %v, %d documents, %d tokens", b, r.Err, r.Documents, r.InputTokens)
	}
}

// TestScanAPIEvents: each event type's reading, the shapes the engines
// send (docs/METRICS.md, "Responses, Messages and rerank").
func TestScanAPIEvents(t *testing.T) {
	type want struct {
		text, reasoning, tool, finish, usage, err bool
		in, out, rtok                             int
	}
	for _, tc := range []struct {
		scan func([]byte) (chunkInfo, error)
		data string
		want want
	}{
		{scanResponsesEvent, `{"type":"response.output_text.delta","delta":" a","item_id":"m"}`, want{text: true}},
		{scanResponsesEvent, `{"type":"response.output_text.delta","delta":""}`, want{}},
		{scanResponsesEvent, `{"type":"response.reasoning_text.delta","delta":" b"}`, want{reasoning: true}},
		{scanResponsesEvent, `{"type":"response.reasoning_summary_text.delta","delta":" b"}`, want{reasoning: true}},
		{scanResponsesEvent, `{"type":"response.function_call_arguments.delta","delta":"{\"a\""}`, want{tool: true}},
		{scanResponsesEvent, `{"type":"response.created","response":{"id":"r","usage":null}}`, want{}},
		{scanResponsesEvent, `{"type":"response.completed","response":{"usage":{"input_tokens":4,"output_tokens":9,"output_tokens_details":{"reasoning_tokens":5}}}}`,
			want{finish: true, usage: true, in: 4, out: 9, rtok: 5}},
		// Ollama's usage: reasoning_tokens 0 whatever it thought is no count.
		{scanResponsesEvent, `{"type":"response.completed","response":{"usage":{"input_tokens":4,"output_tokens":9,"output_tokens_details":{"reasoning_tokens":0}}}}`,
			want{finish: true, usage: true, in: 4, out: 9, rtok: -1}},
		{scanResponsesEvent, `{"type":"response.failed","response":{"error":{"code":"x","message":"boom"}}}`, want{err: true}},
		{scanResponsesEvent, `{"type":"error","code":"x","message":"boom"}`, want{err: true}},
		{scanMessagesEvent, `{"type":"message_start","message":{"id":"m","usage":{"input_tokens":7,"output_tokens":1}}}`, want{usage: true, in: 7, out: 1}},
		{scanMessagesEvent, `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`, want{}},
		{scanMessagesEvent, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`, want{text: true}},
		{scanMessagesEvent, `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`, want{reasoning: true}},
		{scanMessagesEvent, `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abc"}}`, want{}},
		{scanMessagesEvent, `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"x\":"}}`, want{tool: true}},
		{scanMessagesEvent, `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":12}}`, want{finish: true, usage: true, out: 12}},
		{scanMessagesEvent, `{"type":"ping"}`, want{}},
		{scanMessagesEvent, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, want{err: true}},
	} {
		c, err := tc.scan([]byte(tc.data))
		if err != nil {
			t.Fatalf("%s: %v", tc.data, err)
		}
		rtok := -1
		if c.HasReasoningTokens {
			rtok = c.ReasoningTokens
		}
		if tc.want.rtok == 0 {
			tc.want.rtok = -1
		}
		got := want{text: c.HasAnswer && !c.HasToolCall, reasoning: c.HasReasoning, tool: c.HasToolCall, finish: c.HasFinish, usage: c.HasUsage, err: c.HasError,
			in: c.PromptTokens, out: c.CompletionTokens, rtok: rtok}
		if got != tc.want || c.HasText != (got.text || got.reasoning || got.tool) {
			t.Errorf("%s: read %+v, want %+v", tc.data, got, tc.want)
		}
	}
	if m := apiErrorMessage([]byte(`{"type":"response.failed","response":{"error":{"code":"server_error","message":"boom"}}}`)); m != "server_error: boom" {
		t.Errorf("response.failed's message read %q", m)
	}
	if m := apiErrorMessage([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)); m != "Overloaded" {
		t.Errorf("Messages' error read %q", m)
	}
	if _, err := scanMessagesEvent([]byte(`{"type":"content_block_delta","delta":{`)); err == nil {
		t.Error("a truncated event read without an error")
	}
}

// TestRerankAgainstSimulator: every document scored, top_n honoured, the
// tokens the simulator counted, the latency its TTFT; a bad answer (a
// document scored twice) refused.
func TestRerankAgainstSimulator(t *testing.T) {
	srv, url := startSim(t, func(c *sim.Config) { c.TTFT = 15 * time.Millisecond })
	tg := newTarget(url, 1)
	tg.Endpoint, tg.Stream = Rerank, false
	docs := []string{"the fox", "a quick brown dog", "lazy", "jumps over", "the end"}
	r := tg.Do(context.Background(), Request{Prompt: "which fox", Inputs: docs, TopN: 3})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	rec, ok := srv.Record(r.ResponseID)
	if !ok || r.Documents != 5 || r.InputTokens != rec.PromptTokens || r.InputTokens == 0 {
		t.Fatalf("%d documents, %d tokens (simulator %d)", r.Documents, r.InputTokens, rec.PromptTokens)
	}
	if e := r.E2EL(); e < 15*time.Millisecond || e > 15*time.Millisecond+20*time.Millisecond {
		t.Errorf("e2el %v, planned 15 ms", e)
	}
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"results":[{"index":0,"relevance_score":0.5},{"index":0,"relevance_score":0.4}]}`)
	}))
	defer bad.Close()
	tg.BaseURL = bad.URL
	var re *RerankError
	if r := tg.Do(context.Background(), Request{Prompt: "q", Inputs: docs[:2]}); !errors.As(r.Err, &re) {
		t.Errorf("a document scored twice read as %v", r.Err)
	}
}

// TestAPIsCalibration: exact-length prompts on each API: calibrated by the
// max-tokens-1 probe's usage (input_tokens) and by /tokenize with the
// chat template, every prompt is the isl the server counts.
func TestAPIsCalibration(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) {
		if err := sim.ApplyPersonality(c, sim.PersonaVLLM); err != nil {
			t.Fatal(err)
		}
		c.TTFT, c.ITL = time.Millisecond, 100*time.Microsecond
	})
	for _, ep := range []Endpoint{Responses, Messages} {
		for _, method := range []string{CalibrateProbe, CalibrateTokenize, CalibrateAuto} {
			tg := newTarget(url, 2)
			tg.Endpoint = ep
			v, err := Calibrate(context.Background(), tg, method, ServerInfo{})
			if err != nil {
				t.Fatalf("%s %s: %v", ep, method, err)
			}
			src := &PromptSource{ISL: 100, SharedPrefix: 20, Seed: 3, CellKey: 9, Vocab: v}
			src.Prepare()
			for i := 0; i < 3; i++ {
				r := tg.Do(context.Background(), Request{Prompt: src.Prompt(0, i), MaxTokens: 1})
				if r.Err != nil {
					t.Fatal(r.Err)
				}
				if r.InputTokens != 100 {
					t.Errorf("%s %s: prompt %d is %d tokens as served, want 100 (overhead %d)", ep, method, i, r.InputTokens, v.Overhead)
				}
			}
		}
	}
}
