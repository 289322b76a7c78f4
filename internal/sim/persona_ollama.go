package sim

import (
	"fmt"
	"net/http"
)

// ollamaPersona is Ollama's OpenAI-compatible layer: no /health, no
// /metrics, no tokenizer endpoint, a model loaded on the first request,
// a prompt over the context truncated rather than refused.
var ollamaPersona = persona{
	name:             PersonaOllama,
	version:          "0.6.5",
	metrics:          MetricsNone,
	subword:          true,
	firstWordQuirk:   true,
	lazyLoad:         true,
	cache:            cacheSlots,
	streamType:       "text/event-stream; charset=utf-8",
	badJSON:          apiErr{status: http.StatusBadRequest, typ: "BadRequestError", msg: "invalid JSON body: "},
	cleanRunnerDeath: true,
	routes: func(s *Server) {
		s.openAIRoutes()
		m := s.mux
		m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte("Ollama is running"))
		})
		m.HandleFunc("GET /api/version", s.handleVersion)
		m.HandleFunc("GET /api/tags", s.handleOllamaTags)
		m.HandleFunc("POST /api/show", s.handleOllamaShow)
	},
	rawModels: true,
	modelEntry: func(s *Server, m string) any {
		return map[string]any{"id": ollamaTag(m), "object": "model", "created": s.created, "owned_by": "library"}
	},
	// A name with or without ":latest".
	lookupModel: func(s *Server, name string) (string, *apiErr) {
		if name == "" {
			return s.cfg.Models[0], nil
		}
		if _, ok := s.ollamaModel(name); ok {
			return name, nil
		}
		return "", &apiErr{status: http.StatusNotFound, typ: "not_found_error",
			msg: fmt.Sprintf("model %q not found, try pulling it first", name)}
	},
	// A prompt over num_ctx is truncated, keeping the first 4 and the
	// last tokens (its runner's "truncating input prompt ... keep=4").
	checkPrompt: func(s *Server, p *genPlan, _ *genRequest, _ string) *apiErr {
		if n, m := len(p.promptIDs), s.cfg.MaxModelLen; n > m {
			keep := min(ollamaNumKeep, m)
			ids := make([]int, 0, m)
			ids = append(ids, p.promptIDs[:keep]...)
			p.promptIDs = append(ids, p.promptIDs[n-(m-keep):]...)
		}
		return nil
	},
	// It shifts the context instead.
	chatRoom: roomIgnored,
	// It never refuses.
	checkContext: func(*Server, int, *int) *apiErr { return nil },
	// Its OpenAI-compatible layer's openai.NewError.
	writeErr: func(w http.ResponseWriter, e *apiErr) {
		typ := "api_error"
		switch e.status {
		case http.StatusBadRequest:
			typ = "invalid_request_error"
		case http.StatusNotFound:
			typ = "not_found_error"
		}
		writeRawJSON(w, e.status, map[string]any{"error": map[string]any{"message": e.msg, "type": typ, "param": nil, "code": nil}})
	},
	// Go's mux (gin's is the same text).
	notFound: func(_ *Server, w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
}
