package loadgen

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine/machinetest"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/stats"
)

// TestReasoningAgainstSimulator is issue 48's reasoning check: a
// 200-token thinking phase at 5 ms a token after a 20 ms TTFT puts the
// first answer token at 20 + 200×5 = 1020 ms. The client's time to it
// must be within its stated error of the simulator's own (the ttft
// excess bounds of TestMeasurementErrorAgainstSimulator: the request's
// trip, 2 ms at concurrency 1, 10 ms at 16), the reasoning and answer
// counts exact per request, and a request whose budget the reasoning
// used up ok but unanswered; with the reasoning under reasoning_content
// (vLLM's persona: counted from the deltas) and under reasoning (the
// generic persona, which reports usage's reasoning_tokens).
func TestReasoningAgainstSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("a thinking phase takes a second a request")
	}
	const reasoning, answer = 200, 24
	planned := 20*time.Millisecond + reasoning*5*time.Millisecond
	for _, field := range []struct {
		persona, field, source string
	}{
		{sim.PersonaVLLM, sim.FieldReasoningContent, ReasoningFromEvents},
		{"", sim.FieldReasoning, ReasoningFromUsage},
	} {
		for _, tc := range []struct {
			conc, requests int
			excessP50      float64 // ms
		}{{1, 3, 2}, {16, 16, 10}} {
			t.Run(field.field+"/c"+itoa(tc.conc), func(t *testing.T) {
				machine := machinetest.Start()
				srv, url := startSim(t, func(c *sim.Config) {
					if field.persona != "" {
						if err := sim.ApplyPersonality(c, field.persona); err != nil {
							t.Fatal(err)
						}
					}
					c.TTFT, c.ITL, c.EOSProb = 20*time.Millisecond, 5*time.Millisecond, 0
					c.Reasoning = sim.Reasoning{Tokens: reasoning, ITL: 5 * time.Millisecond, Field: field.field}
				})
				tg := newTarget(url, tc.conc)
				tg.Endpoint = Chat
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
				var ttfo, excess []float64
				for _, r := range rs {
					if r.Err != nil {
						t.Fatalf("request failed: %v", r.Err)
					}
					rec, ok := srv.Record(r.ResponseID)
					if !ok {
						t.Fatalf("no simulator record for %q", r.ResponseID)
					}
					if r.ReasoningTokens != rec.ReasoningTokens || r.ReasoningTokens != reasoning ||
						r.AnswerTokens != rec.CompletionTokens-rec.ReasoningTokens || r.AnswerTokens != answer {
						t.Fatalf("%s: reasoning %d answer %d tokens, the simulator wrote %d of %d", r.ResponseID, r.ReasoningTokens, r.AnswerTokens, rec.ReasoningTokens, rec.CompletionTokens)
					}
					if r.ReasoningSource != field.source || !r.Answered() {
						t.Fatalf("%s: reasoning counted from %q (want %q), answered %v", r.ResponseID, r.ReasoningSource, field.source, r.Answered())
					}
					d, _ := r.TTFO()
					ttfo = append(ttfo, msf(d))
					// The simulator's own first answer event: event 200.
					excess = append(excess, msf(d)-msf(rec.Events[reasoning].Time.Sub(rec.Received)))
					if ft, _ := r.TTFR(); msf(r.TTFT()) != msf(ft) {
						t.Errorf("%s: ttft %v is not the first reasoning token's %v", r.ResponseID, r.TTFT(), ft)
					}
				}
				s, e := stats.Summarize(ttfo), stats.Summarize(excess)
				t.Logf("%s c=%d: ttfo p50 %.3f ms (planned %.0f), excess over the simulator's own p50 %.3f ms", field.field, tc.conc, s.P50, msf(planned), e.P50)
				// A ttfo before the simulator wrote the answer is wrong on any
				// machine; the excess bound and the planned time are claims
				// about a quiet one (the simulator's own wake is late beside
				// busy neighbours), judged as TestMeasurementErrorAgainstSimulator's.
				if e.P50 < 0 || s.P50 < msf(planned) {
					t.Fatalf("ttfo p50 %.3f ms before the simulator's answer (excess %.3f ms, planned %.0f)", s.P50, e.P50, msf(planned))
				}
				if e.P50 > tc.excessP50 || s.P50 > msf(planned)+tc.excessP50+5 {
					msg := fmt.Sprintf("ttfo p50 %.3f ms (planned %.0f), its excess over the simulator's own view %.3f ms (bound %.0f)", s.P50, msf(planned), e.P50, tc.excessP50)
					t.Log(msg)
					machine.Judge(t, "the time to first answer within the client's error of the planned one")
					t.Error(msg)
				}
			})
		}
	}
}

// TestReasoningBudgetCut: max_tokens below the thinking phase ends the
// request thinking (finish_reason length): ok, unanswered, every token
// reasoning; streamed and whole, under either field name.
func TestReasoningBudgetCut(t *testing.T) {
	for _, field := range []string{sim.FieldReasoningContent, sim.FieldReasoning} {
		srv, url := startSim(t, func(c *sim.Config) {
			c.TTFT, c.ITL = time.Millisecond, 100*time.Microsecond
			c.Reasoning = sim.Reasoning{Tokens: 50, Field: field}
		})
		_ = srv
		for _, stream := range []bool{true, false} {
			tg := newTarget(url, 1)
			tg.Endpoint, tg.Stream = Chat, stream
			r := tg.Do(context.Background(), Request{Prompt: "think", MaxTokens: 20})
			if r.Err != nil {
				t.Fatalf("%s stream=%v: %v", field, stream, r.Err)
			}
			if r.Answered() || r.AnswerTokens != 0 || r.ReasoningTokens != 20 || r.OutputTokens != 20 {
				t.Errorf("%s stream=%v: answered %v, reasoning %d, answer %d, output %d; want unanswered, 20, 0, 20",
					field, stream, r.Answered(), r.ReasoningTokens, r.AnswerTokens, r.OutputTokens)
			}
			if _, ok := r.TTFO(); ok {
				t.Errorf("%s stream=%v: a time to first answer without an answer", field, stream)
			}
		}
	}
}

// TestReasoningCalibrationProbe: the calibration's non-streamed
// max_tokens 1 probe on a thinking model gets an empty content and one
// reasoning token; it needs only usage.prompt_tokens (issue 48: it read
// "response carried no tokens" and every cell failed).
func TestReasoningCalibrationProbe(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) {
		c.Reasoning = sim.Reasoning{Tokens: 10, Field: sim.FieldReasoning}
	})
	tg := newTarget(url, 1)
	tg.Endpoint = Chat
	n, err := tg.probeCount(context.Background(), "one two three")
	if err != nil || n <= 0 {
		t.Fatalf("probe: %d, %v", n, err)
	}
}

// TestNoReasoningIsZero: a model that does not think reports 0 reasoning
// tokens, counted, and its time to the first answer is its TTFT.
func TestNoReasoningIsZero(t *testing.T) {
	_, url := startSim(t, nil)
	tg := newTarget(url, 1)
	tg.Endpoint = Chat
	r := tg.Do(context.Background(), Request{Prompt: "hi", MaxTokens: 8, Body: map[string]any{"ignore_eos": true}})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	o, ok := r.TTFO()
	if !ok || o != r.TTFT() || r.ReasoningTokens != 0 || r.AnswerTokens != 8 || r.ReasoningSource == ReasoningUnknown {
		t.Errorf("ttfo %v (ttft %v), reasoning %d (%s), answer %d", o, r.TTFT(), r.ReasoningTokens, r.ReasoningSource, r.AnswerTokens)
	}
}

// TestReasoningDrawnLengths: a thinking phase drawn per prompt from
// [20, 60] is counted exactly, request by request, against what the
// simulator wrote, and the lengths do vary.
func TestReasoningDrawnLengths(t *testing.T) {
	srv, url := startSim(t, func(c *sim.Config) {
		c.TTFT, c.ITL = time.Millisecond, 50*time.Microsecond
		c.Reasoning = sim.Reasoning{Tokens: 20, TokensMax: 60}
	})
	tg := newTarget(url, 4)
	tg.Endpoint = Chat
	defer tg.HTTP.CloseIdleConnections()
	seen := map[int]bool{}
	for i := range 12 {
		r := tg.Do(context.Background(), Request{Prompt: "think about " + itoa(i+1), MaxTokens: 80, Body: map[string]any{"ignore_eos": true}})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		rec, _ := srv.Record(r.ResponseID)
		if r.ReasoningTokens != rec.ReasoningTokens || r.AnswerTokens != 80-rec.ReasoningTokens || rec.ReasoningTokens < 20 || rec.ReasoningTokens > 60 {
			t.Fatalf("%s: client %d+%d tokens, simulator %d reasoning of %d", r.ResponseID, r.ReasoningTokens, r.AnswerTokens, rec.ReasoningTokens, rec.CompletionTokens)
		}
		seen[rec.ReasoningTokens] = true
	}
	if len(seen) < 4 {
		t.Errorf("12 prompts thought %d distinct lengths: not drawn", len(seen))
	}
}

// TestCalibrationProbeNeedsOnlyPromptTokens: the calibration probe reads
// usage.prompt_tokens whatever the answer showed. A thinking model's parser
// can hold its one token back (Ollama v0.17.4's qwen3-thinking trims a
// leading newline from the thinking: content "" and no reasoning, usage
// completion_tokens 1, as internal/loadgen/testdata/ollama-0.17.4's
// think-chat-1token.txt records with a visible token); the probe then
// said "response carried no tokens" and the cells were not calibrated
// (prompts at 141 tokens for isl 48 on the real Ollama, 3 runs in 4).
// The server here answers that body over real HTTP on loopback.
func TestCalibrationProbeNeedsOnlyPromptTokens(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-3","object":"chat.completion","created":1796573687,"model":"stories-think","system_fingerprint":"fp_ollama",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`)
	}))
	defer srv.Close()
	tg := newTarget(srv.URL, 1)
	tg.Endpoint = Chat
	n, err := tg.probeCount(context.Background(), "Once upon a time")
	if err != nil || n != 5 {
		t.Fatalf("probe: %d, %v; want 5 prompt tokens", n, err)
	}
}
