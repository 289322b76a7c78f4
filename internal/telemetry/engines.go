package telemetry

import "strings"

// Engine is what benchrun knows about a serving engine's HTTP surface.
type Engine struct {
	Name string
	// HealthPath answers 200 when the server is ready (503 while loading is
	// normal for llama-server and vLLM).
	HealthPath string
	// ModelsPath lists served models in OpenAI's /v1/models shape.
	ModelsPath string
	// MetricsPath is the Prometheus endpoint; empty when the engine has none.
	MetricsPath string
	// MetricsPort is the port MetricsPath is served on when it is not the
	// API's own (MAX serves metrics on 8001); 0 means the API port.
	MetricsPort int
	// DefaultTag is appended to a served name without a tag when the
	// engine lists models with one (Ollama lists "stories" as "stories:latest").
	DefaultTag string
	// EmbeddingsArgs are the server flags without which the engine
	// refuses /v1/embeddings: llama-server answers 501 unless started
	// with --embeddings, and 400 when its pooling is none.
	EmbeddingsArgs []string
}

// Engines are the presets a plan names with `engine:`. "custom" is the
// default for a server benchrun has no preset for; its paths are the
// common ones and a plan overrides them on the health stage.
var Engines = map[string]Engine{
	"custom": {Name: "custom", HealthPath: "/health", ModelsPath: "/v1/models"},
	"sim":    {Name: "sim", HealthPath: "/health", ModelsPath: "/v1/models", MetricsPath: "/metrics"},
	"llama-server": {Name: "llama-server", HealthPath: "/health", ModelsPath: "/v1/models", MetricsPath: "/metrics",
		EmbeddingsArgs: []string{"--embeddings", "--pooling", "mean"}},
	"vllm":   {Name: "vllm", HealthPath: "/health", ModelsPath: "/v1/models", MetricsPath: "/metrics"},
	"sglang": {Name: "sglang", HealthPath: "/health", ModelsPath: "/v1/models", MetricsPath: "/metrics"},
	// Ollama has no /health: GET / answers 200 "Ollama is running".
	"ollama": {Name: "ollama", HealthPath: "/", ModelsPath: "/v1/models", DefaultTag: "latest"},
	// MAX answers readiness on /v1/health (what Modular's own examples
	// poll) and serves Prometheus metrics on a port of its own,
	// MAX_SERVE_METRICS_ENDPOINT_PORT, 8001 unless set.
	"max": {Name: "max", HealthPath: "/v1/health", ModelsPath: "/v1/models", MetricsPath: "/metrics", MetricsPort: 8001},
	"tgi": {Name: "tgi", HealthPath: "/health", ModelsPath: "/v1/models", MetricsPath: "/metrics"},
}

// EngineFor returns the preset for name, or the custom preset.
func EngineFor(name string) Engine {
	if e, ok := Engines[name]; ok {
		return e
	}
	return Engines["custom"]
}

// Serves reports whether a served-model id answers to the plan's model
// name, allowing the engine's default tag ("stories" is "stories:latest").
func (e Engine) Serves(id, model string) bool {
	if id == model {
		return true
	}
	return e.DefaultTag != "" && !strings.Contains(model, ":") && id == model+":"+e.DefaultTag
}
