package engines

import "strings"

// Sim is benchrun's own simulator (`benchrun sim`, internal/sim) as its
// generic persona serves it: vLLM-shaped endpoints.
var Sim = Engine{
	Name:        "sim",
	HealthPath:  "/health",
	ModelsPath:  "/v1/models",
	MetricsPath: "/metrics",
	OwnedBy:     []string{"benchrun-sim"},
	// The generic persona serves vLLM's cache reset and profiler.
	ResetCachePath:   "/reset_prefix_cache",
	ProfileStartPath: "/start_profile",
	ProfileStopPath:  "/stop_profile",
	// benchrun sim --lora-modules name=path,...: each name is served as a
	// model of its own (the path is not read).
	LoRAArgs: func(as [][2]string) []string {
		parts := make([]string, len(as))
		for i, a := range as {
			parts[i] = a[0] + "=" + a[1]
		}
		return []string{"--lora-modules", strings.Join(parts, ",")}
	},
	VersionPath: "/version",
	Tokenize:    DialectPrompt,
	NoGPU:       true,
}
