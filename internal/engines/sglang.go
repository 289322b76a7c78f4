package engines

// SGLang is SGLang's server (`python -m sglang.launch_server`).
var SGLang = Engine{
	Name:        "sglang",
	HealthPath:  "/health",
	ModelsPath:  "/v1/models",
	MetricsPath: "/metrics",
	Metrics: Metrics{
		Running: []string{"sglang:num_running_reqs"},
		Waiting: []string{"sglang:num_queue_reqs"},
		KV:      []string{"sglang:token_usage"},
		// num_retracted_reqs is a gauge in the builds benchrun has seen;
		// a counter where a build exports one.
		Preempt:      []string{"sglang:num_retracted_reqs_total"},
		PreemptGauge: []string{"sglang:num_retracted_reqs"},
		PromptTokens: []string{"sglang:prompt_tokens_total"},
		GenTokens:    []string{"sglang:generation_tokens_total"},
		TTFT:         []string{"sglang:time_to_first_token_seconds"},
		ITL:          []string{"sglang:inter_token_latency_seconds"},
		Prefix:       [][2]string{{"sglang:cached_tokens_total", "sglang:prompt_tokens_total"}},
		HitRate:      []string{"sglang:cache_hit_rate"},
	},
	OwnedBy: []string{"sglang"},
	// python/sglang/srt/entrypoints/http_server.py: /flush_cache (GET or
	// POST; 200 "Cache flushed...", 400 while requests run) and the
	// profiler's /start_profile and /stop_profile.
	ResetCachePath:   "/flush_cache",
	ProfileStartPath: "/start_profile",
	ProfileStopPath:  "/stop_profile",
	// --enable-lora --lora-paths name=path ...: a request names an
	// adapter by its name as the model (or in lora_path).
	LoRAArgs: func(as [][2]string) []string {
		out := []string{"--enable-lora", "--lora-paths"}
		for _, a := range as {
			out = append(out, a[0]+"="+a[1])
		}
		return out
	},
	Info:         InfoSGLangServerInfo,
	VersionPath:  "/version",
	Tokenize:     DialectPrompt,
	Binaries:     []string{"sglang"},
	PythonModule: "sglang",
	Image:        "lmsysorg/sglang:latest",
}
