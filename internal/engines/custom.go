package engines

// Custom is the default for a server benchrun has no preset for; its
// paths are the common ones and a plan overrides them on the health
// stage.
var Custom = Engine{
	Name:        "custom",
	HealthPath:  "/health",
	ModelsPath:  "/v1/models",
	VersionPath: "/version",
}
