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
		{PersonaLlamaServer, map[string]bool{epMessages: true, epRerank: true}},
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
