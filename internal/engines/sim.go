package engines

// Sim is benchrun's own simulator (`benchrun sim`, internal/sim) as its
// generic persona serves it: vLLM-shaped endpoints.
var Sim = Engine{
	Name:        "sim",
	HealthPath:  "/health",
	ModelsPath:  "/v1/models",
	MetricsPath: "/metrics",
	OwnedBy:     []string{"benchrun-sim"},
	VersionPath: "/version",
	Tokenize:    DialectPrompt,
	NoGPU:       true,
}
