package engines

import "regexp"

// Ollama has no /health (GET / answers 200 "Ollama is running"), no
// metrics endpoint and no tokenizer endpoint, and lists "stories" as
// "stories:latest".
var Ollama = Engine{
	Name:         "ollama",
	HealthPath:   "/",
	ModelsPath:   "/v1/models",
	NoMetrics:    "Ollama exposes no metrics endpoint",
	DefaultTag:   "latest",
	OwnedBy:      []string{"library", "ollama"},
	Info:         InfoOllama,
	Tokenize:     DialectNone,
	Binaries:     []string{"ollama"},
	ParseVersion: ollamaVersion,
	Image:        "ollama/ollama:latest",
}

// ollama, cmd/cmd.go versionHandler.
var (
	ollamaClient = regexp.MustCompile(`client version is (\S+)`)
	ollamaServer = regexp.MustCompile(`ollama version is (\S+)`)
)

// ollamaVersion is the client's version, the binary benchrun launches
// ("ollama version is 0.6.5", or "Warning: client version is 0.6.5" when
// no server answers).
func ollamaVersion(out string) string {
	if m := ollamaClient.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	if m := ollamaServer.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}
