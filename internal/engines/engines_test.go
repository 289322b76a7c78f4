package engines

import "testing"

func TestEngineServes(t *testing.T) {
	tests := []struct {
		engine, id, model string
		want              bool
	}{
		{"ollama", "stories:latest", "stories", true},
		{"ollama", "stories:latest", "stories:latest", true},
		{"ollama", "stories:q8", "stories", false},
		{"vllm", "stories:latest", "stories", false},
		{"vllm", "meta-llama/Llama-3.2-1B", "meta-llama/Llama-3.2-1B", true},
		{"nonesuch", "a", "a", true},
	}
	for _, tt := range tests {
		if got := For(tt.engine).Serves(tt.id, tt.model); got != tt.want {
			t.Errorf("%s.Serves(%q, %q) = %v, want %v", tt.engine, tt.id, tt.model, got, tt.want)
		}
	}
	if For("ollama").HealthPath != "/" {
		t.Error("Ollama has no /health; its preset must poll /")
	}
	if m := For("max"); m.HealthPath != "/v1/health" || m.MetricsPort != 8001 {
		t.Errorf("MAX preset %+v: readiness on /v1/health, metrics on port 8001", m)
	}
}
