// Package sim is benchrun's built-in OpenAI-compatible LLM-serving simulator.
//
// It is the ground truth that benchrun's load generator is checked against, so
// it deliberately shares no code with internal/loadgen: a bug in one cannot
// hide a bug in the other. It serves vLLM-shaped endpoints in one of two modes:
//
//   - fixed: every token is written at an exact, load-independent time
//     (received + ttft + k*itl), for accuracy tests of the client;
//   - engine: a continuous-batching model (max_num_seqs, a KV-cache budget,
//     chunked prefill, a prefix cache, a per-step cost model) that produces the
//     curves real servers show under load.
//
// See docs/SIM.md for the model, its knobs and its approximations.
package sim

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Mode names.
const (
	ModeFixed  = "fixed"
	ModeEngine = "engine"
)

// Metrics flavours for /metrics.
const (
	MetricsVLLM     = "vllm"
	MetricsLlamaCpp = "llamacpp"
	MetricsBoth     = "both"
	MetricsSGLang   = "sglang"
	MetricsNone     = "none" // no /metrics endpoint (Ollama has none)
)

// Config configures a Server. Start from DefaultConfig and change fields.
type Config struct {
	// Models are the served model names; the first is the default when a
	// request names none.
	Models []string
	// AnswerAs, when set, is the model every generation answer names,
	// whatever was asked: a server that lists the plan's model but
	// serves a fallback.
	AnswerAs string
	// ModelSpeeds gives a served model (one of Models) fixed mode's TTFT
	// and ITL of its own in place of TTFT and ITL: a base model and its
	// adapters served at different speeds, each with a prompt cache of its
	// own (models.go), which a mix's per-model rows are judged against.
	ModelSpeeds map[string]ModelSpeed
	// Mode is ModeFixed or ModeEngine.
	Mode string
	// TTFT and ITL drive fixed mode: the k-th token-bearing event (k from 0)
	// is written at received + TTFT + k*ITL.
	TTFT time.Duration
	ITL  time.Duration
	// TTFTSpread, when positive, makes fixed mode's TTFT a draw per
	// request, reproducible from the seed and the request's number:
	// TTFT × exp(TTFTSpread × Z), Z standard normal (a lognormal whose
	// median is TTFT and whose p-th quantile is TTFT × exp(TTFTSpread ×
	// z_p)): a latency distribution known in closed form, whose
	// percentiles a precision target or a bound can be checked against.
	TTFTSpread float64
	// ITLSpread, when positive, draws each answer gap of fixed mode the
	// same way, per request and gap: ITL × exp(ITLSpread × Z), so a
	// cell's pooled gaps are independent draws of a lognormal of median
	// ITL (the record keeps each request's PlannedGaps): the percentile
	// bounds' coverage is checked against it.
	ITLSpread float64
	// Reasoning is a thinking phase before the answer (reasoning.go).
	Reasoning Reasoning
	// Tools sets the tool calls' and structured answers' invalid rates
	// (tools.go).
	Tools Tools
	// LoadTime is how long after New the server pretends to load the model:
	// /health answers 503 and the API answers 503 until it has passed.
	LoadTime time.Duration
	// ListenAfter delays listening by this long after the process starts
	// (Serve only), as vLLM and SGLang do: they listen once the model is
	// loaded, so a client sees connection refused, not 503, until then.
	ListenAfter time.Duration
	// Seed makes every random choice (jitter, early EOS, faults, output text)
	// reproducible.
	Seed int64
	// Debug enables GET/DELETE /debug/requests and GET /debug/engine.
	Debug bool
	// MaxModelLen bounds prompt+max_tokens, as vLLM's --max-model-len does.
	MaxModelLen int
	// TokensPerChunk is how many tokens each content event carries (and, in
	// engine mode, how many tokens a sequence gains per decode step), like
	// speculative decoding packing several accepted tokens per step.
	TokensPerChunk int
	// EOSProb is the per-token probability of an early end of sequence after
	// min_tokens when the request does not set ignore_eos. 0 disables it.
	EOSProb float64
	// DefaultMaxTokens is used by chat requests that give no max_tokens;
	// completions default to 16, as in OpenAI's API.
	DefaultMaxTokens int
	// EmbeddingDim is the length of /v1/embeddings vectors.
	EmbeddingDim int
	// Embeddings is llama-server's --embeddings: without it the
	// llama-server personality refuses /v1/embeddings with llama.cpp's
	// 501 ("Start it with `--embeddings`"), as the real server does. Other
	// personalities always embed. Pooling is its --pooling: "none" makes
	// /v1/embeddings a 400 (unpooled vectors are not OpenAI-shaped);
	// anything else ("" = the model's default) embeds.
	Embeddings bool
	Pooling    string
	// MediaTokenTime is what one media token adds to a chat request's TTFT
	// in fixed mode (engine mode prefills media tokens like text ones). An
	// image costs ceil(W/28) × ceil(H/28) tokens (docs/SIM.md, "Media").
	MediaTokenTime time.Duration
	// AudioSecondTime is what one second of audio costs a transcription,
	// after TTFT: processing = TTFT + seconds × AudioSecondTime.
	AudioSecondTime time.Duration
	// Metrics chooses the /metrics names: "vllm", "llamacpp" or "both".
	Metrics string
	// MetricsLegacyNames serves the spellings older engines used instead
	// of the current ones: vLLM's vllm:gpu_cache_usage_perc,
	// vllm:gpu_prefix_cache_{queries,hits}_total and
	// vllm:time_per_output_token_seconds (renamed in 0.10/0.11), and
	// llama.cpp's llamacpp:kv_cache_usage_ratio / kv_cache_tokens (since
	// removed), so that a scraper is tested against both generations.
	MetricsLegacyNames bool
	// MaxRecords bounds how many request records are kept (oldest dropped).
	MaxRecords int
	// Engine configures engine mode.
	Engine EngineConfig
	// Faults injects failures at configured rates; X-Sim-Fault selects them
	// per request regardless of these rates.
	Faults FaultConfig
	// ExitAfter, when positive, makes Serve exit the process with ExitCode
	// this long after it starts listening, to rehearse a server dying.
	ExitAfter time.Duration
	ExitCode  int
	// SlowFirst, when positive, serves the first SlowFirst generation
	// requests in fixed mode with TTFT and ITL multiplied by SlowFactor: a
	// passing disturbance (a neighbour's job, a cold cache), against which
	// a re-measurement comes out as usual.
	SlowFirst  int
	SlowFactor float64

	// Personality is the engine whose wire habits the simulator reproduces:
	// PersonaGeneric ("" or "generic", the vLLM-shaped default), PersonaVLLM,
	// PersonaLlamaServer, PersonaSGLang or PersonaOllama. It selects the
	// endpoints, dialects, error shapes and the tokenizer; ApplyPersonality
	// (or, in tests, simtest.DefaultConfigFor) also sets the knobs below to
	// the engine's defaults. See docs/SIM.md.
	Personality string
	// Version is the engine version the personality reports (/version,
	// /props build_info, /api/version); "" means DefaultVersion(Personality).
	Version string
	// CloseAfterStream makes every streamed response end the way
	// llama-server's does: the headers say keep-alive, and the TCP
	// connection is closed CloseAfterStreamDelay after the last chunk,
	// without reading the next request sent on it.
	CloseAfterStream      bool
	CloseAfterStreamDelay time.Duration
	// PromptCache gives fixed mode a prompt cache (engine mode has its own,
	// Engine.PrefixCache): a repeated prefix lowers TTFT and is reported as
	// cached tokens. The style (whole blocks, token-level slots or radix)
	// follows the personality.
	PromptCache bool
	// Slots is llama-server's -np: /props total_slots, /slots, and how many
	// recent prompts the llama-server and Ollama prompt caches keep.
	Slots int
	// SlotsObjectNextToken makes /slots send next_token as an object, as
	// llama.cpp builds to 2025 did; current ones send an array of one.
	SlotsObjectNextToken bool
	// TrainContextLen is the context the model was trained with, reported
	// by llama-server (meta.n_ctx_train) and Ollama (llama.context_length);
	// 0 means 2*MaxModelLen. The served context stays MaxModelLen.
	TrainContextLen int
}

// EngineConfig is the continuous-batching model. Step time is
//
//	StepBase + PerSeq*decoding_seqs + PerPrefillToken*prefill_tokens
//	  + PerContextToken*context_tokens_of_decoding_seqs
//
// multiplied by (1 + Jitter*N(0,1)), clipped at 0.
type EngineConfig struct {
	MaxNumSeqs       int           // sequences per step at most (vLLM --max-num-seqs)
	KVCacheTokens    int           // KV-cache capacity in tokens
	BlockSize        int           // KV block size in tokens
	ChunkedPrefill   bool          // split prompts to fit MaxBatchedTokens per step
	MaxBatchedTokens int           // token budget per step (vLLM --max-num-batched-tokens)
	PrefixCache      bool          // reuse KV of identical prompt prefixes (whole blocks)
	StepBase         time.Duration // fixed cost of one step (weights read, launch overhead)
	PerSeq           time.Duration // cost per decoding sequence in a step
	PerPrefillToken  time.Duration // cost per prompt token computed in a step
	PerContextToken  time.Duration // cost per context token of decoding sequences (attention reads)
	Jitter           float64       // relative standard deviation of step time
}

// FaultConfig sets failure rates (0..1, drawn per request from the seed).
type FaultConfig struct {
	ErrorRate       float64       // answer with an error status instead of generating
	ErrorCodes      []int         // statuses to pick from (500, 429, 503)
	DropRate        float64       // close the connection mid-stream
	DropAfter       int           // ... after this many token-bearing events
	StallRate       float64       // stop writing for Stall
	Stall           time.Duration // how long a stall lasts
	StallAt         int           // stall after this many token-bearing events
	MalformedRate   float64       // write one malformed SSE event mid-stream
	SlowHeadersRate float64       // delay the response headers
	SlowHeaders     time.Duration // ... by this much
	CutRate         float64       // end the stream cleanly but early (Ollama's dying runner)
	CutAfter        int           // ... after this many token-bearing events
	HangUpRate      float64       // hold the request, then close its connection with no answer
	HangUp          time.Duration // ... after holding it this long
}

// DefaultConfig returns a fixed-mode simulator serving "sim-llama".
func DefaultConfig() Config {
	return Config{
		Models:           []string{"sim-llama"},
		Mode:             ModeFixed,
		TTFT:             20 * time.Millisecond,
		ITL:              5 * time.Millisecond,
		Seed:             1,
		MaxModelLen:      8192,
		TokensPerChunk:   1,
		EOSProb:          0.002,
		DefaultMaxTokens: 256,
		EmbeddingDim:     384,
		Embeddings:       true,
		MediaTokenTime:   20 * time.Microsecond,
		AudioSecondTime:  10 * time.Millisecond,
		Metrics:          MetricsVLLM,
		MaxRecords:       10000,
		Engine:           DefaultEngine(),
		Faults: FaultConfig{
			ErrorCodes:  []int{500},
			DropAfter:   5,
			Stall:       3 * time.Second,
			StallAt:     1,
			SlowHeaders: 2 * time.Second,
			CutAfter:    5,
			HangUp:      1500 * time.Millisecond,
		},
		ExitCode:              1,
		CloseAfterStreamDelay: 2 * time.Millisecond,
		Slots:                 4,
	}
}

// DefaultEngine is a small, fast engine: it saturates at 64 sequences
// (about 12k tokens/s), so a sweep over it shows a full curve in seconds.
func DefaultEngine() EngineConfig {
	return EngineConfig{
		MaxNumSeqs:       64,
		KVCacheTokens:    65536,
		BlockSize:        16,
		ChunkedPrefill:   true,
		MaxBatchedTokens: 2048,
		PrefixCache:      true,
		StepBase:         2 * time.Millisecond,
		PerSeq:           50 * time.Microsecond,
		PerPrefillToken:  10 * time.Microsecond,
		PerContextToken:  0,
		Jitter:           0,
	}
}

// Preset is a named engine shape. The numbers are first-order approximations
// from hardware bandwidth and FLOPs, not measurements; see docs/SIM.md.
type Preset struct {
	Name        string
	Description string
	Engine      EngineConfig
	MaxModelLen int
}

var presets = map[string]Preset{
	"default": {
		Name:        "default",
		Description: "small fast engine: 64 seqs, 64k KV tokens, 2 ms step",
		Engine:      DefaultEngine(),
		MaxModelLen: 8192,
	},
	"h100-llama3-8b": {
		Name:        "h100-llama3-8b",
		Description: "vLLM, Llama-3-8B bf16 on one H100 80GB (approximation)",
		Engine: EngineConfig{
			MaxNumSeqs: 256, KVCacheTokens: 430000, BlockSize: 16,
			ChunkedPrefill: true, MaxBatchedTokens: 8192, PrefixCache: true,
			// 16 GB of weights at ~3.3 TB/s is ~5 ms; plus launch overhead.
			StepBase: 6 * time.Millisecond, PerSeq: 30 * time.Microsecond,
			// 16 GFLOP per token at ~600 TFLOP/s effective.
			PerPrefillToken: 27 * time.Microsecond,
			// 128 KiB of KV per token read at ~3.3 TB/s.
			PerContextToken: 40 * time.Nanosecond,
			Jitter:          0.03,
		},
		MaxModelLen: 8192,
	},
	"a100-llama3-8b": {
		Name:        "a100-llama3-8b",
		Description: "vLLM, Llama-3-8B bf16 on one A100 40GB (approximation)",
		Engine: EngineConfig{
			MaxNumSeqs: 256, KVCacheTokens: 150000, BlockSize: 16,
			ChunkedPrefill: true, MaxBatchedTokens: 4096, PrefixCache: true,
			StepBase: 10 * time.Millisecond, PerSeq: 50 * time.Microsecond,
			PerPrefillToken: 70 * time.Microsecond, PerContextToken: 80 * time.Nanosecond,
			Jitter: 0.03,
		},
		MaxModelLen: 8192,
	},
	"llamacpp-1b-q4-cpu": {
		Name:        "llamacpp-1b-q4-cpu",
		Description: "llama-server -np 8, Llama-3.2-1B Q4_K_M on an 8-core CPU (approximation)",
		Engine: EngineConfig{
			MaxNumSeqs: 8, KVCacheTokens: 4096 * 8, BlockSize: 256,
			ChunkedPrefill: true, MaxBatchedTokens: 2048, PrefixCache: true,
			StepBase: 25 * time.Millisecond, PerSeq: 4 * time.Millisecond,
			PerPrefillToken: 400 * time.Microsecond, PerContextToken: 300 * time.Nanosecond,
			Jitter: 0.05,
		},
		MaxModelLen: 4096,
	},
}

// Presets lists the preset names, sorted.
func Presets() []Preset {
	out := make([]Preset, 0, len(presets))
	for _, p := range presets {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ApplyPreset sets the engine and max model length of cfg from a preset and
// switches cfg to engine mode, since a preset only means something there.
func ApplyPreset(cfg *Config, name string) error {
	p, ok := presets[name]
	if !ok {
		names := make([]string, 0, len(presets))
		for n := range presets {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("unknown preset %q (known: %s)", name, strings.Join(names, ", "))
	}
	cfg.Engine = p.Engine
	cfg.MaxModelLen = p.MaxModelLen
	cfg.Mode = ModeEngine
	return nil
}

// Validate reports the first inconsistency in cfg.
func (c Config) Validate() error {
	errs := c.modelErrors()
	errs = appendFailed(errs, c.servingChecks())
	if c.Mode == ModeEngine {
		errs = append(errs, c.engineErrors()...)
	}
	errs = append(errs, c.faultErrors()...)
	errs = appendFailed(errs, c.lifecycleChecks())
	return errors.Join(errs...)
}

// fieldCheck is one rule of Validate: err is reported when bad holds.
type fieldCheck struct {
	bad bool
	err error
}

// appendFailed appends the errors of the checks that failed, in order.
func appendFailed(errs []error, checks []fieldCheck) []error {
	for _, ch := range checks {
		if ch.bad {
			errs = append(errs, ch.err)
		}
	}
	return errs
}

func (c Config) modelErrors() []error {
	var errs []error
	if len(c.Models) == 0 {
		errs = append(errs, errors.New("at least one model name is needed"))
	}
	for _, m := range c.Models {
		if strings.TrimSpace(m) == "" {
			errs = append(errs, errors.New("empty model name"))
		}
	}
	if why := checkModelSpeeds(c); why != "" {
		errs = append(errs, errors.New(why))
	}
	return errs
}

// servingChecks are the rules on the knobs every mode uses.
func (c Config) servingChecks() []fieldCheck {
	return append([]fieldCheck{
		{c.Mode != ModeFixed && c.Mode != ModeEngine,
			fmt.Errorf("mode %q: want fixed or engine", c.Mode)},
		{c.TTFT < 0 || c.ITL < 0 || c.LoadTime < 0 || c.ListenAfter < 0,
			errors.New("ttft, itl, load-time and listen-after must not be negative")},
		{c.MaxModelLen <= 0, errors.New("max-model-len must be positive")},
		{c.TokensPerChunk <= 0, errors.New("tokens-per-chunk must be positive")},
		{c.EOSProb < 0 || c.EOSProb >= 1, errors.New("eos-prob must be in [0, 1)")},
		{c.DefaultMaxTokens <= 0 || c.EmbeddingDim <= 0,
			errors.New("default-max-tokens and embedding-dim must be positive")},
		{!validMetrics(c.Metrics),
			fmt.Errorf("metrics %q: want vllm, llamacpp, both, sglang or none", c.Metrics)},
		{!ValidPersonality(c.Personality),
			fmt.Errorf("personality %q: want one of %s", c.Personality, strings.Join(Personalities(), ", "))},
		{c.CloseAfterStreamDelay < 0, errors.New("close-after-stream-delay must not be negative")},
		{c.Slots < 0 || c.TrainContextLen < 0, errors.New("slots and train-context-len must not be negative")},
		{c.MaxRecords < 0, errors.New("max-records must not be negative")},
	}, append(c.Reasoning.checks(), c.Tools.checks()...)...)
}

func validMetrics(m string) bool {
	switch m {
	case MetricsVLLM, MetricsLlamaCpp, MetricsBoth, MetricsSGLang, MetricsNone:
		return true
	}
	return false
}

// engineErrors checks the engine-mode model. Its capacity rules are
// reported one at a time, since each presumes the ones before it hold.
func (c Config) engineErrors() []error {
	var errs []error
	e := c.Engine
	if e.MaxNumSeqs <= 0 || e.BlockSize <= 0 || e.KVCacheTokens <= 0 || e.MaxBatchedTokens <= 0 {
		errs = append(errs, errors.New("engine: max-num-seqs, block-size, kv-cache-tokens and max-batched-tokens must be positive"))
	} else if e.MaxBatchedTokens < e.MaxNumSeqs*c.TokensPerChunk {
		// vLLM's rule: otherwise a full batch of decodes cannot fit a step.
		errs = append(errs, fmt.Errorf("engine: max-batched-tokens %d must be at least max-num-seqs %d (times tokens-per-chunk)", e.MaxBatchedTokens, e.MaxNumSeqs))
	} else if e.KVCacheTokens < c.MaxModelLen+e.BlockSize {
		// Like vLLM, refuse a cache that cannot hold one full-length sequence:
		// such a request could never be admitted and would wait forever.
		errs = append(errs, fmt.Errorf("engine: kv-cache-tokens %d cannot hold one sequence of max-model-len %d", e.KVCacheTokens, c.MaxModelLen))
	}
	if e.StepBase < 0 || e.PerSeq < 0 || e.PerPrefillToken < 0 || e.PerContextToken < 0 || e.Jitter < 0 {
		errs = append(errs, errors.New("engine: costs and jitter must not be negative"))
	}
	if e.StepBase+e.PerSeq <= 0 {
		errs = append(errs, errors.New("engine: step-base + per-seq must be positive, or steps would take no time"))
	}
	return errs
}

// faultErrors checks the configured fault rates and their parameters.
func (c Config) faultErrors() []error {
	var errs []error
	f := c.Faults
	for _, r := range []float64{f.ErrorRate, f.DropRate, f.StallRate, f.MalformedRate, f.SlowHeadersRate, f.CutRate, f.HangUpRate} {
		if r < 0 || r > 1 {
			errs = append(errs, errors.New("fault rates must be in [0, 1]"))
			break
		}
	}
	if f.HangUpRate > 0 && f.HangUp <= 0 {
		errs = append(errs, errors.New("hang-up-rate needs a positive hang-up duration"))
	}
	if f.ErrorRate > 0 && len(f.ErrorCodes) == 0 {
		errs = append(errs, errors.New("error-rate needs error-codes"))
	}
	for _, code := range f.ErrorCodes {
		if code < 400 || code > 599 {
			errs = append(errs, fmt.Errorf("error code %d: want 4xx or 5xx", code))
		}
	}
	if f.DropAfter < 0 || f.StallAt < 0 || f.Stall < 0 || f.SlowHeaders < 0 || f.CutAfter < 0 || f.HangUp < 0 {
		errs = append(errs, errors.New("fault counts and durations must not be negative"))
	}
	return errs
}

// lifecycleChecks are the rules on the rehearsed disturbances: the exit
// and the slow first requests.
func (c Config) lifecycleChecks() []fieldCheck {
	return []fieldCheck{
		{c.ExitAfter < 0, errors.New("exit-after must not be negative")},
		{c.SlowFirst < 0 || c.SlowFirst > 0 && c.SlowFactor <= 0,
			errors.New("slow-first must not be negative, and needs a positive slow-factor")},
		{c.TTFTSpread < 0 || c.TTFTSpread > 0 && c.Mode != ModeFixed,
			errors.New("ttft-spread must not be negative, and draws fixed mode's TTFT only (the engine's steps have their own jitter)")},
		{c.ITLSpread < 0 || c.ITLSpread > 0 && c.Mode != ModeFixed,
			errors.New("itl-spread must not be negative, and draws fixed mode's gaps only (the engine's steps have their own jitter)")},
	}
}
