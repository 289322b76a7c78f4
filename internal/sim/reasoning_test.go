package sim

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReasoningWireShapes: each persona sends its thinking under its
// engine's member (the engines' sources, docs/METRICS.md, Reasoning):
// vLLM, SGLang and llama-server delta.reasoning_content, Ollama
// delta.reasoning beside an empty content; only the generic persona
// reports usage's completion_tokens_details.reasoning_tokens (as OpenAI
// does). The reasoning comes first, every event one kind, the record
// counts it, and a whole answer splits it into message.<field> and
// content.
func TestReasoningWireShapes(t *testing.T) {
	for _, tc := range []struct {
		persona, field string
		emptyContent   bool
		usage          bool
	}{
		{"", FieldReasoningContent, false, true},
		{PersonaVLLM, FieldReasoningContent, false, false},
		{PersonaSGLang, FieldReasoningContent, false, false},
		{PersonaLlamaServer, FieldReasoningContent, false, false},
		{PersonaOllama, FieldReasoning, true, false},
	} {
		t.Run(tc.persona, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.persona != "" {
				if err := ApplyPersonality(&cfg, tc.persona); err != nil {
					t.Fatal(err)
				}
			}
			cfg.TTFT, cfg.ITL, cfg.EOSProb = time.Millisecond, 100*time.Microsecond, 0
			cfg.Reasoning = Reasoning{Tokens: 5}
			s, url := startSim(t, cfg)
			c := testClient()
			body := map[string]any{"model": cfg.Models[0], "messages": []map[string]string{{"role": "user", "content": "think"}},
				"max_tokens": 8, "stream": true, "stream_options": map[string]bool{"include_usage": true}}
			_, data := postJSON(t, c, url+"/v1/chat/completions", body)
			var kinds []string
			usage := ""
			for _, line := range strings.Split(string(data), "\n") {
				payload, ok := strings.CutPrefix(line, "data: ")
				if !ok || payload == "[DONE]" {
					continue
				}
				var ev struct {
					Choices []struct {
						Delta map[string]any `json:"delta"`
					} `json:"choices"`
					Usage json.RawMessage `json:"usage"`
				}
				if err := json.Unmarshal([]byte(payload), &ev); err != nil {
					t.Fatalf("%s: %v", payload, err)
				}
				if len(ev.Usage) > 0 && string(ev.Usage) != "null" {
					usage = string(ev.Usage)
				}
				for _, ch := range ev.Choices {
					d := ch.Delta
					switch r, hasR := d[tc.field].(string); {
					case hasR && r != "":
						if c, has := d["content"]; tc.emptyContent != (has && c == "") {
							t.Errorf("reasoning delta %v: content beside it %v, want empty content %v", d, c, tc.emptyContent)
						}
						kinds = append(kinds, "r")
					case d["content"] != nil && d["content"] != "":
						kinds = append(kinds, "a")
					}
				}
			}
			if got := strings.Join(kinds, ""); got != "rrrrraaa" {
				t.Errorf("event kinds %q, want 5 reasoning then 3 answer", got)
			}
			if has := strings.Contains(usage, `"completion_tokens_details":{"reasoning_tokens":5}`); has != tc.usage {
				t.Errorf("usage %s: reasoning_tokens reported %v, want %v", usage, has, tc.usage)
			}
			recs := s.Records()
			if len(recs) == 0 || recs[len(recs)-1].ReasoningTokens != 5 || recs[len(recs)-1].CompletionTokens != 8 {
				t.Errorf("records %+v", recs)
			}
			body["stream"] = false
			delete(body, "stream_options")
			// A fresh connection: llama-server closes its own after a stream.
			_, data = postJSON(t, testClient(), url+"/v1/chat/completions", body)
			var whole struct {
				Choices []struct {
					Message map[string]string `json:"message"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(data, &whole); err != nil || len(whole.Choices) != 1 {
				t.Fatalf("%s: %v", data, err)
			}
			m := whole.Choices[0].Message
			if len(strings.Fields(m[tc.field])) != 5 || len(strings.Fields(m["content"])) != 3 {
				t.Errorf("whole answer %v: want 5 reasoning words under %s and 3 of content", m, tc.field)
			}
		})
	}
}

// TestReasoningChunksAndSchedule: with several tokens per event no event
// mixes thinking and answering (10 reasoning tokens in events of 4, 4, 2,
// then the answer's), fixed mode writes the reasoning events ritl apart
// and the answer's itl apart (the first answer at ttft + 3 × ritl), and
// engine mode, which batches as it steps, splits an event that crosses
// into two.
func TestReasoningChunksAndSchedule(t *testing.T) {
	for _, mode := range []string{ModeFixed, ModeEngine} {
		cfg := DefaultConfig()
		cfg.Mode, cfg.EOSProb = mode, 0
		cfg.TTFT, cfg.ITL, cfg.TokensPerChunk = 2*time.Millisecond, time.Millisecond, 4
		cfg.Reasoning = Reasoning{Tokens: 10, ITL: 3 * time.Millisecond}
		s, url := startSim(t, cfg)
		body := map[string]any{"model": cfg.Models[0], "messages": []map[string]string{{"role": "user", "content": "think"}},
			"max_tokens": 18, "stream": true}
		_, data := postJSON(t, testClient(), url+"/v1/chat/completions", body)
		var sizes []string
		for _, line := range strings.Split(string(data), "\n") {
			payload, ok := strings.CutPrefix(line, "data: ")
			if !ok || payload == "[DONE]" {
				continue
			}
			var ev struct {
				Choices []struct {
					Delta map[string]string `json:"delta"`
				} `json:"choices"`
			}
			_ = json.Unmarshal([]byte(payload), &ev)
			for _, ch := range ev.Choices {
				r, a := ch.Delta[FieldReasoningContent], ch.Delta["content"]
				if r != "" && a != "" {
					t.Fatalf("%s: an event mixes reasoning and answer: %v", mode, ch.Delta)
				}
				if r != "" {
					sizes = append(sizes, "r"+strconv.Itoa(len(strings.Fields(r))))
				} else if a != "" {
					sizes = append(sizes, "a"+strconv.Itoa(len(strings.Fields(a))))
				}
			}
		}
		recs := s.Records()
		rec := recs[len(recs)-1]
		if rec.ReasoningTokens != 10 || rec.CompletionTokens != 18 {
			t.Errorf("%s: record %d reasoning of %d", mode, rec.ReasoningTokens, rec.CompletionTokens)
		}
		if mode != ModeFixed {
			continue
		}
		if got := strings.Join(sizes, " "); got != "r4 r4 r2 a4 a4" {
			t.Errorf("fixed: events %q, want r4 r4 r2 a4 a4", got)
		}
		if len(rec.Events) == 5 {
			first := rec.Events[3].Time.Sub(rec.Received)
			if first < 2*time.Millisecond+3*3*time.Millisecond {
				t.Errorf("fixed: the first answer event at %v, planned 11ms", first)
			}
		}
	}
}
