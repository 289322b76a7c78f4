package sim

import (
	"fmt"
	"strings"
)

// Personality names: which real engine's wire habits the simulator shows.
// The generic personality is the simulator as it always was (vLLM-shaped
// endpoints, one token per word); the others follow their engine's
// endpoints, dialects, error shapes and tokenizer. See docs/SIM.md.
const (
	PersonaGeneric     = "generic"
	PersonaVLLM        = "vllm"
	PersonaLlamaServer = "llama-server"
	PersonaSGLang      = "sglang"
	PersonaOllama      = "ollama"
)

// Personalities lists the personality names, generic first.
func Personalities() []string {
	out := make([]string, len(personas))
	for i, p := range personas {
		out[i] = p.name
	}
	return out
}

// ValidPersonality reports whether name is a personality ("" is generic).
func ValidPersonality(name string) bool { return personaOf(name) != nil }

// normPersona maps "" to PersonaGeneric.
func normPersona(name string) string {
	if name == "" {
		return PersonaGeneric
	}
	return name
}

// DefaultVersion is the engine version a personality reports when
// Config.Version is empty.
func DefaultVersion(personality string) string {
	if p := personaOf(personality); p != nil {
		return p.version
	}
	return genericPersona.version
}

// ApplyPersonality switches cfg to a personality and sets the knobs where
// the real engine's defaults differ from the generic simulator's: the
// /metrics names, llama-server's close after every stream, and a prompt
// cache in fixed mode. Like ApplyPreset, it overwrites those fields; set
// explicit values after calling it. Version is left alone ("" reports the
// personality's default).
func ApplyPersonality(cfg *Config, name string) error {
	p := personaOf(name)
	if p == nil {
		return fmt.Errorf("unknown personality %q (known: %s)", name, strings.Join(Personalities(), ", "))
	}
	cfg.Personality = p.name
	cfg.CloseAfterStream = p.closeAfterStream
	cfg.PromptCache = p != &genericPersona
	// llama-server embeds only when started with --embeddings.
	cfg.Embeddings = !p.embedsOnRequest
	cfg.Metrics = p.metrics
	return nil
}

// version is what the server reports as its engine version.
func (s *Server) version() string {
	if s.cfg.Version != "" {
		return s.cfg.Version
	}
	return s.persona.version
}

// trainCtx is the context length the "model" was trained with.
func (s *Server) trainCtx() int {
	if s.cfg.TrainContextLen > 0 {
		return s.cfg.TrainContextLen
	}
	return 2 * s.cfg.MaxModelLen
}

func (s *Server) slots() int { return max(s.cfg.Slots, 1) }
