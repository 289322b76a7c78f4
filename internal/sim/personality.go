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
	return []string{PersonaGeneric, PersonaVLLM, PersonaLlamaServer, PersonaSGLang, PersonaOllama}
}

// ValidPersonality reports whether name is a personality ("" is generic).
func ValidPersonality(name string) bool {
	if name == "" {
		return true
	}
	for _, p := range Personalities() {
		if p == name {
			return true
		}
	}
	return false
}

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
	switch normPersona(personality) {
	case PersonaVLLM:
		return "0.11.0"
	case PersonaLlamaServer:
		return "b6500-sim"
	case PersonaSGLang:
		return "0.5.2"
	case PersonaOllama:
		return "0.6.5"
	}
	return "benchrun-sim"
}

// ApplyPersonality switches cfg to a personality and sets the knobs where
// the real engine's defaults differ from the generic simulator's: the
// /metrics names, llama-server's close after every stream, and a prompt
// cache in fixed mode. Like ApplyPreset, it overwrites those fields; set
// explicit values after calling it. Version is left alone ("" reports the
// personality's default).
func ApplyPersonality(cfg *Config, name string) error {
	if !ValidPersonality(name) {
		return fmt.Errorf("unknown personality %q (known: %s)", name, strings.Join(Personalities(), ", "))
	}
	name = normPersona(name)
	cfg.Personality = name
	cfg.CloseAfterStream = false
	cfg.PromptCache = name != PersonaGeneric
	// llama-server embeds only when started with --embeddings.
	cfg.Embeddings = name != PersonaLlamaServer
	switch name {
	case PersonaGeneric, PersonaVLLM:
		cfg.Metrics = MetricsVLLM
	case PersonaLlamaServer:
		cfg.Metrics = MetricsLlamaCpp
		cfg.CloseAfterStream = true
	case PersonaSGLang:
		cfg.Metrics = MetricsSGLang
	case PersonaOllama:
		cfg.Metrics = MetricsNone
	}
	return nil
}

// version is what the server reports as its engine version.
func (s *Server) version() string {
	if s.cfg.Version != "" {
		return s.cfg.Version
	}
	return DefaultVersion(s.persona)
}

// trainCtx is the context length the "model" was trained with.
func (s *Server) trainCtx() int {
	if s.cfg.TrainContextLen > 0 {
		return s.cfg.TrainContextLen
	}
	return 2 * s.cfg.MaxModelLen
}

func (s *Server) slots() int { return max(s.cfg.Slots, 1) }
