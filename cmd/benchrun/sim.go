package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/pipeline"
)

// simFlags declares `benchrun sim`'s flags: the built-in
// OpenAI-compatible simulator, served until ctx is cancelled. Flag errors
// exit 2, serving errors 3.
func simFlags(fs *flag.FlagSet) runFunc {
	o := declareSim(fs)
	return func(ctx context.Context, _ []string, _, stderr io.Writer) error {
		cfg, err := o.config()
		if err != nil {
			return fail(pipeline.ExitInvalid, err)
		}
		if err := sim.Serve(ctx, cfg, *o.addr, sim.ServeOptions{Log: stderr}); err != nil {
			return fail(pipeline.ExitInfra, err)
		}
		return nil
	}
}

// simOptions are `benchrun sim`'s flags: the configuration they set, and
// those read after parsing.
type simOptions struct {
	fs                                      *flag.FlagSet
	cfg                                     sim.Config
	addr, models, preset, persona, errCodes *string
	modelSpeeds, loraModules                *string
}

// declareSim declares the simulator's flags on fs, over its defaults.
func declareSim(fs *flag.FlagSet) *simOptions {
	o := &simOptions{fs: fs, cfg: sim.DefaultConfig()}
	cfg := &o.cfg
	eng := &cfg.Engine
	flt := &cfg.Faults
	o.addr = fs.String("addr", "127.0.0.1:8000", "listen address")
	o.models = fs.String("model", "sim-llama", "served model name(s), comma separated")
	o.loraModules = fs.String("lora-modules", "", "LoRA adapters served as models of their own, NAME=PATH, comma separated (vLLM's --lora-modules; the path is not read)")
	o.modelSpeeds = fs.String("model-speed", "", "fixed mode: a served model's own TTFT and ITL, NAME=TTFT/ITL, comma separated (lora-a=30ms/8ms); each model also has a prompt cache of its own")
	o.preset = fs.String("preset", "", "engine preset (implies --mode engine)")
	o.persona = fs.String("as", "", "engine personality: "+strings.Join(sim.Personalities(), ", ")+" (its endpoints, dialects, tokenizer and defaults)")
	fs.StringVar(&cfg.Version, "engine-version", "", "engine version the personality reports (default: the personality's)")
	fs.BoolVar(&cfg.CloseAfterStream, "close-after-stream", false, "close the TCP connection after every streamed response, keep-alive headers notwithstanding (llama-server's default)")
	fs.DurationVar(&cfg.CloseAfterStreamDelay, "close-after-stream-delay", cfg.CloseAfterStreamDelay, "how long after a stream's last chunk the connection is closed")
	fs.BoolVar(&cfg.PromptCache, "prompt-cache", false, "fixed mode: a prompt cache (repeated prefixes lower TTFT; on for every personality but generic)")
	fs.IntVar(&cfg.Slots, "slots", cfg.Slots, "llama-server slots (-np): /props total_slots, /slots, prompt-cache entries")
	fs.IntVar(&cfg.TrainContextLen, "train-context-len", 0, "context the model was trained with, as llama-server and Ollama report it (default 2*max-model-len)")
	fs.StringVar(&cfg.Mode, "mode", cfg.Mode, "fixed (exact ttft/itl) or engine (continuous batching)")
	fs.DurationVar(&cfg.TTFT, "ttft", cfg.TTFT, "fixed mode: time to first token")
	fs.Float64Var(&cfg.TTFTSpread, "ttft-spread", 0, "fixed mode: each request's TTFT drawn as ttft × exp(spread × N(0,1)), a lognormal with median --ttft (known percentiles)")
	fs.DurationVar(&cfg.ITL, "itl", cfg.ITL, "fixed mode: gap between token events")
	fs.Float64Var(&cfg.ITLSpread, "itl-spread", 0, "fixed mode: each answer gap drawn as itl × exp(spread × N(0,1)), a lognormal with median --itl (known percentiles)")
	fs.IntVar(&cfg.Reasoning.Tokens, "reasoning-tokens", 0, "chat: reasoning tokens before the answer (a thinking model; max_tokens counts them)")
	fs.IntVar(&cfg.Reasoning.TokensMax, "reasoning-tokens-max", 0, "chat: draw each prompt's reasoning length from [--reasoning-tokens, this]")
	fs.DurationVar(&cfg.Reasoning.ITL, "reasoning-itl", 0, "fixed mode: gap between reasoning events (default --itl)")
	fs.StringVar(&cfg.Reasoning.Field, "reasoning-field", "", "the delta member reasoning goes in: reasoning_content or reasoning (default: the personality's)")
	fs.Float64Var(&cfg.Tools.InvalidJSONRate, "tool-invalid-json-rate", 0, "chat with tools: the share of tool calls whose arguments are cut short (not JSON)")
	fs.Float64Var(&cfg.Tools.SchemaInvalidRate, "tool-schema-invalid-rate", 0, "chat with tools: the share of tool calls whose arguments are JSON but invalid against the tool's parameters")
	fs.Float64Var(&cfg.Tools.FormatInvalidRate, "format-invalid-rate", 0, "structured output (response_format, format, guided_json): the share of answers cut short (not JSON)")
	fs.IntVar(&cfg.Tools.AgentSteps, "agent-steps", 0, "chat with tools: serve agent sessions of 1 to N steps, a tool call per step until the last, a final answer then; the steps a session plans come from its first user message")
	fs.DurationVar(&cfg.LoadTime, "load-time", 0, "answer 503 (loading) for this long after start")
	fs.DurationVar(&cfg.ListenAfter, "listen-after", 0, "listen only this long after start (connection refused until then, as vLLM while it loads)")
	fs.Int64Var(&cfg.Seed, "seed", cfg.Seed, "seed for jitter, early EOS, faults and output text")
	fs.BoolVar(&cfg.Debug, "debug", false, "serve /debug/requests and /debug/engine")
	fs.IntVar(&cfg.MaxModelLen, "max-model-len", cfg.MaxModelLen, "maximum prompt+output tokens")
	fs.IntVar(&cfg.TokensPerChunk, "tokens-per-chunk", cfg.TokensPerChunk, "tokens per streamed event (and per decode step)")
	fs.Float64Var(&cfg.EOSProb, "eos-prob", cfg.EOSProb, "per-token early-EOS probability after min_tokens, without ignore_eos")
	fs.IntVar(&cfg.DefaultMaxTokens, "default-max-tokens", cfg.DefaultMaxTokens, "chat max_tokens when the request gives none")
	fs.IntVar(&cfg.EmbeddingDim, "embedding-dim", cfg.EmbeddingDim, "embedding vector length")
	fs.StringVar(&cfg.Metrics, "metrics", cfg.Metrics, "/metrics names: vllm, llamacpp, both, sglang or none (default: the personality's)")
	fs.BoolVar(&cfg.MetricsLegacyNames, "metrics-legacy-names", false, "/metrics: older engines' spellings (vllm:gpu_cache_usage_perc, vllm:time_per_output_token_seconds, llamacpp:kv_cache_usage_ratio) instead of the current ones")
	fs.IntVar(&cfg.MaxRecords, "max-records", cfg.MaxRecords, "request records kept for /debug/requests")

	fs.IntVar(&eng.MaxNumSeqs, "max-num-seqs", eng.MaxNumSeqs, "engine: sequences per step")
	fs.IntVar(&eng.KVCacheTokens, "kv-cache-tokens", eng.KVCacheTokens, "engine: KV-cache capacity in tokens")
	fs.IntVar(&eng.BlockSize, "block-size", eng.BlockSize, "engine: KV block size in tokens")
	fs.BoolVar(&eng.ChunkedPrefill, "chunked-prefill", eng.ChunkedPrefill, "engine: split prompts to fit the step token budget")
	fs.IntVar(&eng.MaxBatchedTokens, "max-batched-tokens", eng.MaxBatchedTokens, "engine: token budget per step")
	fs.BoolVar(&eng.PrefixCache, "prefix-cache", eng.PrefixCache, "engine: reuse KV of shared prompt prefixes")
	fs.DurationVar(&eng.StepBase, "step-base", eng.StepBase, "engine: fixed cost per step")
	fs.DurationVar(&eng.PerSeq, "per-seq", eng.PerSeq, "engine: cost per decoding sequence per step")
	fs.DurationVar(&eng.PerPrefillToken, "per-prefill-token", eng.PerPrefillToken, "engine: cost per prompt token computed")
	fs.DurationVar(&eng.PerContextToken, "per-context-token", eng.PerContextToken, "engine: cost per context token of decoding sequences")
	fs.Float64Var(&eng.Jitter, "jitter", eng.Jitter, "engine: relative standard deviation of step time")

	fs.Float64Var(&flt.ErrorRate, "error-rate", 0, "fault: fraction of requests answered with an error")
	o.errCodes = fs.String("error-codes", "500", "fault: error statuses to pick from, comma separated (e.g. 500,429,503)")
	fs.Float64Var(&flt.DropRate, "drop-rate", 0, "fault: fraction of streams whose connection is closed mid-way")
	fs.IntVar(&flt.DropAfter, "drop-after", flt.DropAfter, "fault: token events written before a drop")
	fs.Float64Var(&flt.StallRate, "stall-rate", 0, "fault: fraction of streams that stall")
	fs.DurationVar(&flt.Stall, "stall", flt.Stall, "fault: stall length")
	fs.IntVar(&flt.StallAt, "stall-at", flt.StallAt, "fault: token events written before a stall")
	fs.Float64Var(&flt.MalformedRate, "malformed-rate", 0, "fault: fraction of responses with a malformed event/body")
	fs.Float64Var(&flt.SlowHeadersRate, "slow-headers-rate", 0, "fault: fraction of responses with delayed headers")
	fs.DurationVar(&flt.SlowHeaders, "slow-headers", flt.SlowHeaders, "fault: header delay")
	fs.Float64Var(&flt.CutRate, "cut-rate", 0, "fault: fraction of streams ended cleanly but early (no finish_reason, usage or [DONE])")
	fs.IntVar(&flt.CutAfter, "cut-after", flt.CutAfter, "fault: token events written before a cut")
	fs.Float64Var(&flt.HangUpRate, "hang-up-rate", 0, "fault: fraction of requests held, then their connection closed with no answer")
	fs.DurationVar(&flt.HangUp, "hang-up", flt.HangUp, "fault: how long a hung-up request is held")
	fs.DurationVar(&cfg.ExitAfter, "exit-after", 0, "fault: exit the process this long after listening")
	fs.IntVar(&cfg.ExitCode, "exit-code", cfg.ExitCode, "fault: exit status for --exit-after")
	fs.BoolVar(&cfg.Embeddings, "embeddings", false, "llama-server personality: serve /v1/embeddings (llama-server's --embeddings; without it embeddings answer 501)")
	fs.StringVar(&cfg.Pooling, "pooling", "", "llama-server personality: its --pooling (none answers embeddings 400)")
	fs.DurationVar(&cfg.MediaTokenTime, "media-token-time", cfg.MediaTokenTime, "fixed mode: TTFT added per image token of a chat request")
	fs.DurationVar(&cfg.AudioSecondTime, "audio-second-time", cfg.AudioSecondTime, "transcriptions: processing time per second of audio, after TTFT")
	fs.IntVar(&cfg.SlowFirst, "slow-first", 0, "fault: fixed mode serves the first N generation requests slower (a passing disturbance)")
	fs.Float64Var(&cfg.SlowFactor, "slow-factor", 1.5, "fault: how much slower --slow-first serves (TTFT and ITL multiplied)")

	return o
}

// config is the configuration the parsed flags ask for: the preset's,
// then the personality's, with the flags given explicitly over both.
func (o *simOptions) config() (sim.Config, error) {
	cfg := o.cfg
	set := map[string]bool{}
	o.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	// The preset fills the engine and the personality its knobs; flags
	// given explicitly still win.
	explicit := cfg
	if *o.preset != "" {
		if err := sim.ApplyPreset(&cfg, *o.preset); err != nil {
			return cfg, err
		}
	}
	if set["as"] {
		if err := sim.ApplyPersonality(&cfg, *o.persona); err != nil {
			return cfg, fmt.Errorf("--as: %w", err)
		}
	}
	overrideSet(&cfg, &explicit, set)
	cfg.Models = nil
	for _, m := range strings.Split(*o.models, ",") {
		if m = strings.TrimSpace(m); m != "" {
			cfg.Models = append(cfg.Models, m)
		}
	}
	for _, part := range strings.Split(*o.loraModules, ",") {
		if name, _, _ := strings.Cut(strings.TrimSpace(part), "="); name != "" {
			cfg.Models = append(cfg.Models, name)
		}
	}
	speeds, err := sim.ParseModelSpeeds(*o.modelSpeeds)
	if err != nil {
		return cfg, fmt.Errorf("--model-speed: %w", err)
	}
	cfg.ModelSpeeds = speeds
	cfg.Faults.ErrorCodes = nil
	for _, c := range strings.Split(*o.errCodes, ",") {
		code, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil {
			return cfg, fmt.Errorf("--error-codes: %q is not a status code", c)
		}
		cfg.Faults.ErrorCodes = append(cfg.Faults.ErrorCodes, code)
	}
	return cfg, cfg.Validate()
}

// overrideSet copies back the flags the user set explicitly, so that
// `--preset h100-llama3-8b --max-num-seqs 64` means the preset with 64 seqs.
func overrideSet(cfg, explicit *sim.Config, set map[string]bool) {
	e, x := &cfg.Engine, &explicit.Engine
	pairs := map[string]func(){
		"mode":               func() { cfg.Mode = explicit.Mode },
		"metrics":            func() { cfg.Metrics = explicit.Metrics },
		"close-after-stream": func() { cfg.CloseAfterStream = explicit.CloseAfterStream },
		"prompt-cache":       func() { cfg.PromptCache = explicit.PromptCache },
		"max-model-len":      func() { cfg.MaxModelLen = explicit.MaxModelLen },
		"max-num-seqs":       func() { e.MaxNumSeqs = x.MaxNumSeqs },
		"kv-cache-tokens":    func() { e.KVCacheTokens = x.KVCacheTokens },
		"block-size":         func() { e.BlockSize = x.BlockSize },
		"chunked-prefill":    func() { e.ChunkedPrefill = x.ChunkedPrefill },
		"max-batched-tokens": func() { e.MaxBatchedTokens = x.MaxBatchedTokens },
		"prefix-cache":       func() { e.PrefixCache = x.PrefixCache },
		"step-base":          func() { e.StepBase = x.StepBase },
		"per-seq":            func() { e.PerSeq = x.PerSeq },
		"per-prefill-token":  func() { e.PerPrefillToken = x.PerPrefillToken },
		"per-context-token":  func() { e.PerContextToken = x.PerContextToken },
		"jitter":             func() { e.Jitter = x.Jitter },
		"embeddings":         func() { cfg.Embeddings = explicit.Embeddings },
		"pooling":            func() { cfg.Pooling = explicit.Pooling },
	}
	for name, apply := range pairs {
		if set[name] {
			apply()
		}
	}
}
