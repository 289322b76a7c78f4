// Package engines describes the serving engines benchrun knows, as a
// client sees them over the wire: one descriptor per engine, in a file of
// its own (vllm.go, sglang.go, llamaserver.go, ...), and the registry of
// them. The health stage, the launch stage, discovery, tokenizer
// calibration and the Prometheus probe read a descriptor instead of
// switching on an engine's name.
//
// The simulator keeps its own description of each engine it imitates
// (internal/sim's personas): it is the ground truth the client is checked
// against, so the two sides share no code, and stages/engines_drift_test.go
// holds them to each other.
package engines

import (
	"regexp"
	"strings"
)

// Tokenizer dialects: how a server's tokenizer endpoint wants to be asked.
const (
	// DialectPrompt: POST /tokenize {"model","prompt"} (or "messages") →
	// {"count","tokens","max_model_len"} (vLLM, SGLang, the simulator).
	DialectPrompt = "prompt"
	// DialectContent: POST /tokenize {"content","add_special"} →
	// {"tokens"} (llama.cpp's llama-server). Any other field gets an empty
	// token list, never an error.
	DialectContent = "content"
	// DialectNone: no usable tokenizer endpoint (Ollama has none).
	DialectNone = "none"
)

// Self-descriptions: the endpoint and shape in which an engine says what
// it is, its version and its context (discovery's questions beyond
// /v1/models and /version).
const (
	// InfoLlamaProps: llama-server's GET /props (build_info,
	// default_generation_settings.n_ctx).
	InfoLlamaProps = "llama-props"
	// InfoSGLangServerInfo: SGLang's GET /get_server_info (version,
	// context_length).
	InfoSGLangServerInfo = "sglang-server-info"
	// InfoOllama: Ollama's GET /api/version, then POST /api/show for the
	// model's num_ctx and context_length.
	InfoOllama = "ollama-api"
)

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
	// NoMetrics, when set, says why the engine is never scraped: it
	// exposes no metrics endpoint at all (Ollama), which a plan's
	// metrics URL cannot change.
	NoMetrics string
	// Metrics are the engine's Prometheus names the probe reads.
	Metrics Metrics
	// SlotsPath is llama-server's per-slot state beside its metrics
	// endpoint ("" for none): the probe's KV usage when /metrics gives
	// none (see internal/telemetry/prom_slots.go for its shape).
	SlotsPath string
	// ResetCachePath empties the engine's prefix cache when POSTed to
	// (the sweep's reset_cache): vLLM's /reset_prefix_cache (served with
	// VLLM_SERVER_DEV_MODE=1), SGLang's /flush_cache; "" for none.
	// ResetSlots says the engine resets slot by slot instead: GET
	// SlotsPath, then POST SlotsPath/{id}?action=erase for each slot
	// (llama-server, started with --slot-save-path).
	ResetCachePath string
	ResetSlots     bool
	// ProfileStartPath and ProfileStopPath start and stop the engine's
	// profiler around a timed pass when POSTed to (the sweep's profile;
	// vLLM with a profiler directory, SGLang); "" for none.
	ProfileStartPath, ProfileStopPath string
	// LoRAArgs are the server flags that load LoRA adapters (a launch
	// stage's adapters: name and path each) so that each is served under
	// its name; nil when benchrun knows no such flags for the engine.
	LoRAArgs func(adapters [][2]string) []string
	// DefaultTag is appended to a served name without a tag when the
	// engine lists models with one (Ollama lists "stories" as "stories:latest").
	DefaultTag string
	// EmbeddingsArgs are the server flags without which the engine
	// refuses /v1/embeddings: llama-server answers 501 unless started
	// with --embeddings, and 400 when its pooling is none.
	EmbeddingsArgs []string
	// OwnedBy are the owned_by values of the engine's /v1/models entries:
	// discovery names the engine by them when the plan did not.
	OwnedBy []string
	// Info is the engine's self-description (Info*; "" for none), asked
	// by discovery in registry order while the engine is not yet known.
	Info string
	// VersionPath answers {"version": ...} ("" when the engine has none,
	// or tells its version in its Info).
	VersionPath string
	// Tokenize is the tokenizer dialect the engine speaks (Dialect*; "":
	// unknown, calibration tries them).
	Tokenize string
	// Binaries are the executables that start the engine: the launch
	// stage asks `<binary> --version` of the one a command runs.
	Binaries []string
	// PythonModule is the package a `python -m PKG...` command runs the
	// engine from ("" for none): its version is the package's metadata.
	PythonModule string
	// ParseVersion finds the version in the output of `--version`
	// (nil: GenericVersion).
	ParseVersion func(out string) string
	// Image is the container image that ships the engine's server, for a
	// Kubernetes Deployment ("" for none: benchrun's own image).
	Image string
	// NoGPU says the engine needs no GPU (benchrun's simulator).
	NoGPU bool
}

// Metrics are an engine's Prometheus names for what the probe reads,
// each list preferred first (the current spelling, then the older one).
type Metrics struct {
	// Running and Waiting are the gauges of requests in the batch and in
	// the queue.
	Running, Waiting []string
	// KV is the KV-cache usage gauge (0..1).
	KV []string
	// Preempt is a counter of preemptions; PreemptGauge a gauge of
	// requests retracted now, read by its rises (SGLang).
	Preempt, PreemptGauge []string
	// PromptTokens and GenTokens are counters of tokens.
	PromptTokens, GenTokens []string
	// PromptHist and GenHist are histograms of per-request token counts,
	// whose sums count tokens (TGI).
	PromptHist, GenHist []string
	// TTFT, ITL and Queue are histograms in seconds.
	TTFT, ITL, Queue []string
	// Prefix are prefix-cache {hits, queries} counter pairs, in tokens.
	Prefix [][2]string
	// HitRate is a prefix-cache hit-rate gauge, read when no counters are
	// served (SGLang's, over its own logging interval).
	HitRate []string
	// CachedApart is a counter of cached prompt tokens that PromptTokens
	// leaves out (newer llama.cpp): the server's prompt tokens are their
	// sum, and its hit rate cached over the sum.
	CachedApart string
	// DecodeSeconds and PromptSeconds are counters of the seconds spent
	// decoding and prefilling: the mean inter-token latency is
	// DecodeSeconds per generated token where no histogram says it
	// (llama.cpp).
	DecodeSeconds, PromptSeconds string
	// Legacy are the older spellings among the names above, said in the
	// row's note when read.
	Legacy []string
}

// Names are the names a plan's `engine:` may take, in registry order
// (Custom first, then benchrun's simulator, then the engines).
func Names() []string {
	out := make([]string, len(registry))
	for i, e := range registry {
		out[i] = e.Name
	}
	return out
}

// All are the engine descriptors in registry order.
func All() []Engine {
	out := make([]Engine, len(registry))
	for i, e := range registry {
		out[i] = *e
	}
	return out
}

// Lookup returns the descriptor named name.
func Lookup(name string) (Engine, bool) {
	for _, e := range registry {
		if e.Name == name {
			return *e, true
		}
	}
	return Engine{}, false
}

// For returns the descriptor named name, or Custom's.
func For(name string) Engine {
	if e, ok := Lookup(name); ok {
		return e
	}
	return Custom
}

// Owning is the engine whose /v1/models says owned_by owner ("": none known).
func Owning(owner string) string {
	for _, e := range registry {
		for _, o := range e.OwnedBy {
			if o == owner {
				return e.Name
			}
		}
	}
	return ""
}

// Serves reports whether a served-model id answers to the plan's model
// name, allowing the engine's default tag ("stories" is "stories:latest").
func (e Engine) Serves(id, model string) bool {
	if id == model {
		return true
	}
	return e.DefaultTag != "" && !strings.Contains(model, ":") && id == model+":"+e.DefaultTag
}

// Version finds the engine's version in the output of its version
// command (ParseVersion, else GenericVersion); "" when there is none.
func (e Engine) Version(out string) string {
	if e.ParseVersion != nil {
		return e.ParseVersion(out)
	}
	return GenericVersion(out)
}

var (
	// A line that is only a version (vllm --version: importlib.metadata's
	// version, "0.11.0" or "0.11.1.dev12+g1234abc").
	versionOnly = regexp.MustCompile(`^v?(\d+\.\d+(?:\.\d+)*(?:[.+-][0-9A-Za-z.+-]*)?)$`)
	// The first version-looking word anywhere ("text-generation-launcher 2.4.0").
	versionWord = regexp.MustCompile(`(?:^|[\s(])v?(\d+\.\d+(?:\.\d+)*(?:[.+-][0-9A-Za-z.+-]*)?)(?:$|[\s),])`)
)

// LastVersionLine is the last line of out that is only a version (an
// engine may log INFO lines first), without a leading "v"; "" for none.
func LastVersionLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if m := versionOnly.FindStringSubmatch(strings.TrimSpace(lines[i])); m != nil {
			return m[1]
		}
	}
	return ""
}

// GenericVersion is the version of an engine without a parser of its
// own: the last line that is only a version, else the first
// version-looking word ("text-generation-launcher 2.4.0").
func GenericVersion(out string) string {
	if v := LastVersionLine(out); v != "" {
		return v
	}
	if m := versionWord.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}
