package sim

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAPIRoutesByPersona: each persona serves the other APIs its engine
// does (persona.apis) and answers the rest as an unknown route.
func TestAPIRoutesByPersona(t *testing.T) {
	for _, tc := range []struct {
		persona string
		serves  map[string]bool
	}{
		{"", map[string]bool{epResponses: true, epMessages: true, epRerank: true}},
		{PersonaVLLM, map[string]bool{epResponses: true, epMessages: true, epRerank: true}},
		{PersonaOllama, map[string]bool{epResponses: true, epMessages: true}},
		{PersonaLlamaServer, map[string]bool{epResponses: true, epMessages: true, epRerank: true}},
		{PersonaSGLang, map[string]bool{epResponses: true, epRerank: true}},
	} {
		cfg := DefaultConfig()
		if tc.persona != "" {
			if err := ApplyPersonality(&cfg, tc.persona); err != nil {
				t.Fatal(err)
			}
		}
		cfg.TTFT, cfg.ITL, cfg.LoadTime = time.Millisecond, 0, 0
		_, url := startSim(t, cfg)
		c := testClient()
		for ep, body := range map[string]map[string]any{
			epResponses: {"input": "a b", "max_output_tokens": 2},
			epMessages:  {"messages": []map[string]string{{"role": "user", "content": "a b"}}, "max_tokens": 2},
			epRerank:    {"query": "a", "documents": []string{"b", "c"}},
		} {
			resp, b := postJSON(t, c, url+"/v1/"+ep, body)
			if got := resp.StatusCode == http.StatusOK; got != tc.serves[ep] {
				t.Errorf("%s: /v1/%s answered %d %s", tc.persona, ep, resp.StatusCode, b)
			}
		}
	}
}

// TestMessagesErrorShape: the Messages API's errors are Anthropic's
// {"type":"error","error":{"type","message"}}, whatever the persona's own
// shape; a request without max_tokens is refused, as Anthropic's API does.
func TestMessagesErrorShape(t *testing.T) {
	cfg := DefaultConfig()
	if err := ApplyPersonality(&cfg, PersonaVLLM); err != nil {
		t.Fatal(err)
	}
	_, url := startSim(t, cfg)
	resp, b := postJSON(t, testClient(), url+"/v1/messages", map[string]any{"messages": []map[string]string{{"role": "user", "content": "a"}}})
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type, Message string
		} `json:"error"`
	}
	if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(b, &e) != nil || e.Type != "error" ||
		e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, "max_tokens") {
		t.Errorf("a Messages request without max_tokens: %d %s", resp.StatusCode, b)
	}
}

// TestLlamaServerResponsesEvents: the llama-server persona's Responses
// events carry neither output_index nor sequence_number, as its
// server-task.cpp writes them; vLLM's carry both.
func TestLlamaServerResponsesEvents(t *testing.T) {
	for persona, bare := range map[string]bool{PersonaLlamaServer: true, PersonaVLLM: false} {
		cfg := DefaultConfig()
		if err := ApplyPersonality(&cfg, persona); err != nil {
			t.Fatal(err)
		}
		cfg.TTFT, cfg.ITL, cfg.LoadTime, cfg.CloseAfterStream = time.Millisecond, 0, 0, false
		_, url := startSim(t, cfg)
		_, b := postJSON(t, testClient(), url+"/v1/responses", map[string]any{"input": "a b", "max_output_tokens": 3, "stream": true})
		s := string(b)
		if !strings.Contains(s, "response.output_text.delta") || strings.Contains(s, `"output_index"`) != !bare || strings.Contains(s, `"sequence_number"`) != !bare {
			t.Errorf("%s: stream %s", persona, s)
		}
	}
	if got := dropOutputIndex(`"item_id":"x","output_index":12,"delta":"y"`); got != `"item_id":"x","delta":"y"` {
		t.Errorf("dropOutputIndex: %s", got)
	}
	if got := dropOutputIndex(`"item_id":"x","output_index":3`); got != `"item_id":"x"` {
		t.Errorf("dropOutputIndex at the end: %s", got)
	}
}
