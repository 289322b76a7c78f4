package engines

import "regexp"

// LlamaServer is llama.cpp's llama-server.
var LlamaServer = Engine{
	Name:        "llama-server",
	HealthPath:  "/health",
	ModelsPath:  "/v1/models",
	MetricsPath: "/metrics",
	Metrics: Metrics{
		Running:      []string{"llamacpp:requests_processing"},
		Waiting:      []string{"llamacpp:requests_deferred"},
		PromptTokens: []string{"llamacpp:prompt_tokens_total"},
		GenTokens:    []string{"llamacpp:tokens_predicted_total"},
		// kv_cache_usage_ratio was removed upstream (PRs #13660, #22879)
		// but older builds serve it; current ones leave it to /slots.
		KV: []string{"llamacpp:kv_cache_usage_ratio"},
		// prompt_tokens_total excludes cached tokens; newer builds count
		// those apart.
		CachedApart: "llamacpp:prompt_tokens_cached_total",
		// The counters, not the *_seconds gauges, which scrapes reset.
		DecodeSeconds: "llamacpp:tokens_predicted_seconds_total",
		PromptSeconds: "llamacpp:prompt_seconds_total",
		Legacy:        []string{"llamacpp:kv_cache_usage_ratio"},
	},
	SlotsPath:  "/slots",
	ResetSlots: true,
	// --lora FILE per adapter: llama-server applies adapters by their
	// index and scale (a request's "lora": [{id, scale}], or
	// POST /lora-adapters), not by a served name, so a sweep's model mix
	// cannot select them by name.
	LoRAArgs: func(as [][2]string) []string {
		var out []string
		for _, a := range as {
			out = append(out, "--lora", a[1])
		}
		return out
	},
	EmbeddingsArgs: []string{"--embeddings", "--pooling", "mean"},
	OwnedBy:        []string{"llamacpp"},
	Info:           InfoLlamaProps,
	Tokenize:       DialectContent,
	Binaries:       []string{"llama-server"},
	ParseVersion:   llamaVersion,
	Image:          "ghcr.io/ggml-org/llama.cpp:server",
}

var (
	// llama.cpp, common/arg.cpp: fprintf(stderr, "version: %d (%s)\n", LLAMA_BUILD_NUMBER, LLAMA_COMMIT).
	llamaVersionLine = regexp.MustCompile(`(?m)^version: (\d+) \(([0-9a-f]+)\)`)
	// Current llama.cpp: "version: 0.2.0-dev (build 7236, commit 3f545be)";
	// a source archive without git metadata: "(build 0, commit unknown)".
	llamaVersionBuild = regexp.MustCompile(`(?m)^version: (\S+) \(build (\d+), commit (\S+)\)`)
)

// llamaVersion is llama.cpp's build number as its release tag ("version:
// 6500 (abcdef0)" is "b6500", the name of the GitHub release of that
// build), or the version it names when it has no build number.
func llamaVersion(out string) string {
	if m := llamaVersionLine.FindStringSubmatch(out); m != nil {
		return "b" + m[1]
	}
	if m := llamaVersionBuild.FindStringSubmatch(out); m != nil {
		if m[2] != "0" {
			return "b" + m[2]
		}
		return m[1] // no build number: the version it names
	}
	return ""
}
