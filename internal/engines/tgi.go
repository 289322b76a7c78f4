package engines

// TGI is Hugging Face's text-generation-inference
// (text-generation-launcher).
var TGI = Engine{
	Name:        "tgi",
	HealthPath:  "/health",
	ModelsPath:  "/v1/models",
	MetricsPath: "/metrics",
	Metrics: Metrics{
		Running: []string{"tgi_batch_current_size"},
		Waiting: []string{"tgi_queue_size"},
		// Histograms of per-request lengths: their sums count tokens.
		PromptHist: []string{"tgi_request_input_length"},
		GenHist:    []string{"tgi_request_generated_tokens"},
		ITL:        []string{"tgi_request_mean_time_per_token_duration"},
		Queue:      []string{"tgi_request_queue_duration"},
	},
	VersionPath: "/version",
	Binaries:    []string{"text-generation-launcher"},
	Image:       "ghcr.io/huggingface/text-generation-inference:latest",
}
