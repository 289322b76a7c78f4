package engines

import "strconv"

// VLLM is vLLM's OpenAI-compatible server (`vllm serve`).
var VLLM = Engine{
	Name:        "vllm",
	HealthPath:  "/health",
	ModelsPath:  "/v1/models",
	MetricsPath: "/metrics",
	// vLLM renamed its KV, prefix-cache and inter-token metrics in
	// 0.10/0.11; the older spelling follows the current one.
	Metrics: Metrics{
		Running:      []string{"vllm:num_requests_running"},
		Waiting:      []string{"vllm:num_requests_waiting"},
		KV:           []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
		Preempt:      []string{"vllm:num_preemptions_total"},
		PromptTokens: []string{"vllm:prompt_tokens_total"},
		GenTokens:    []string{"vllm:generation_tokens_total"},
		TTFT:         []string{"vllm:time_to_first_token_seconds"},
		ITL:          []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"},
		Queue:        []string{"vllm:request_queue_time_seconds"},
		Prefix: [][2]string{
			{"vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"},
			{"vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_queries_total"},
		},
		Legacy: []string{"vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds",
			"vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_queries_total"},
	},
	OwnedBy: []string{"vllm"},
	// vllm/entrypoints/serve/cache/api_router.py and profile/api_router.py:
	// 200 with no body; present only in dev mode and with a profiler set.
	ResetCachePath:   "/reset_prefix_cache",
	ProfileStartPath: "/start_profile",
	ProfileStopPath:  "/stop_profile",
	// vllm serve --enable-lora --lora-modules name=path ... (each served
	// under its name in /v1/models); --max-loras as many as are loaded,
	// so a mix of them runs in one batch.
	LoRAArgs: func(as [][2]string) []string {
		out := []string{"--enable-lora", "--max-loras", strconv.Itoa(len(as)), "--lora-modules"}
		for _, a := range as {
			out = append(out, a[0]+"="+a[1])
		}
		return out
	},
	VersionPath:  "/version",
	Tokenize:     DialectPrompt,
	Binaries:     []string{"vllm"},
	PythonModule: "vllm",
	// vllm --version is importlib.metadata's version, possibly after INFO
	// log lines: only a line that is nothing but a version counts.
	ParseVersion: LastVersionLine,
	Image:        "vllm/vllm-openai:latest",
}
