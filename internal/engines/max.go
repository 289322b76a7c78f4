package engines

// MAX is Modular's MAX serve. It answers readiness on /v1/health (what
// Modular's own examples poll) and serves Prometheus metrics on a port of
// its own, MAX_SERVE_METRICS_ENDPOINT_PORT, 8001 unless set.
var MAX = Engine{
	Name:        "max",
	HealthPath:  "/v1/health",
	ModelsPath:  "/v1/models",
	MetricsPath: "/metrics",
	MetricsPort: 8001,
	VersionPath: "/version",
	Binaries:    []string{"max"},
	Image:       "modular/max-nvidia-full:latest",
}
