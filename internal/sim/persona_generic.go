package sim

import (
	"fmt"
	"net/http"
)

// genericPersona is the simulator as it always was: vLLM-shaped
// endpoints, one token per word, OpenAI's error shape.
var genericPersona = persona{
	reasoningField: FieldReasoningContent,
	// OpenAI's own API reports reasoning_tokens; of the engines, none does.
	reasoningUsage: true,
	apis:           []string{epResponses, epMessages, epRerank},
	name:           PersonaGeneric,
	version:        "benchrun-sim",
	metrics:        MetricsVLLM,
	cache:          cacheBlocks,
	usageCached:    cachedWithPromptCache,
	streamType:     "text/event-stream; charset=utf-8",
	badJSON:        apiErr{status: http.StatusBadRequest, typ: "BadRequestError", msg: "invalid JSON body: "},
	routes:         genericRoutes,
	modelEntry: func(s *Server, m string) any {
		return modelJSON{ID: m, Object: "model", Created: s.created, OwnedBy: "benchrun-sim", Root: m, MaxModelLen: s.cfg.MaxModelLen}
	},
	lookupModel: func(s *Server, name string) (string, *apiErr) {
		if name == "" {
			return s.cfg.Models[0], nil
		}
		if s.models[name] {
			return name, nil
		}
		return "", &apiErr{status: http.StatusNotFound, typ: "NotFoundError", msg: s.unknownModel(name).Error()}
	},
	checkContext: checkTotal,
	writeErr: func(w http.ResponseWriter, e *apiErr) {
		writeError(w, e.status, e.typ, e.msg)
	},
	notFound: func(_ *Server, w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
	},
}

func genericRoutes(s *Server) {
	s.mux.HandleFunc("GET /health", s.handleHealth)
	if s.cfg.Metrics != MetricsNone {
		s.mux.HandleFunc("GET /metrics", s.handleMetrics)
	}
	s.mux.HandleFunc("GET /version", s.handleVersion)
	// vLLM answers /ping like /health (SageMaker's probe).
	s.mux.HandleFunc("GET /ping", s.handleHealth)
	s.mux.HandleFunc("POST /ping", s.handleHealth)
	s.mux.HandleFunc("GET /v1/models", s.ready(s.handleModels))
	s.mux.HandleFunc("POST /v1/completions", s.gen(epCompletions))
	s.mux.HandleFunc("POST /v1/chat/completions", s.gen(epChat))
	s.mux.HandleFunc("POST /v1/embeddings", s.ready(s.handleEmbeddings))
	s.mux.HandleFunc("POST /v1/audio/transcriptions", s.ready(s.handleTranscriptions))
	s.mux.HandleFunc("POST /tokenize", s.ready(s.handleTokenize))
	s.mux.HandleFunc("POST /detokenize", s.ready(s.handleDetokenize))
	s.vllmHookRoutes()
	s.apiRoutes()
}
