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

// TestRegistry: a name, an owned_by and a binary each name one engine,
// or discovery and the launch stage could take one engine for another.
func TestRegistry(t *testing.T) {
	if Names()[0] != Custom.Name {
		t.Errorf("the registry starts with %q; the custom preset is the default and comes first", Names()[0])
	}
	seen := map[string]string{}
	for _, e := range All() {
		keys := []string{"name " + e.Name}
		for _, o := range e.OwnedBy {
			keys = append(keys, "owned_by "+o)
		}
		for _, b := range e.Binaries {
			keys = append(keys, "binary "+b)
		}
		for _, k := range keys {
			if other, ok := seen[k]; ok {
				t.Errorf("%s names both %s and %s", k, other, e.Name)
			}
			seen[k] = e.Name
		}
		if e.HealthPath == "" || e.ModelsPath == "" {
			t.Errorf("%s: no health or models path", e.Name)
		}
		if Owning(firstOr(e.OwnedBy)) != e.Name && len(e.OwnedBy) > 0 {
			t.Errorf("owned_by %q is not %s's", e.OwnedBy[0], e.Name)
		}
	}
	if For("nonesuch").Name != Custom.Name {
		t.Error("an unknown engine is not the custom preset")
	}
}

func firstOr(list []string) string {
	if len(list) == 0 {
		return ""
	}
	return list[0]
}
