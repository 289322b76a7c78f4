package sim

import (
	"fmt"
	"net/http"
)

// sglangPersona is SGLang's server (FastAPI on uvicorn, vLLM's error
// shape, a radix prefix cache).
var sglangPersona = persona{
	name:         PersonaSGLang,
	version:      "0.5.2",
	metrics:      MetricsSGLang,
	subword:      true,
	serverHeader: "uvicorn",
	cache:        cacheRadix,
	usageCached:  cachedAlways,
	streamType:   "text/event-stream; charset=utf-8",
	emptyHealth:  true,
	badJSON:      apiErr{status: http.StatusBadRequest, typ: "BadRequestError", msg: "invalid JSON body: "},
	routes: func(s *Server) {
		s.openAIRoutes()
		m := s.mux
		m.HandleFunc("GET /health", s.handleHealth)
		m.HandleFunc("GET /health_generate", s.handleHealth)
		m.HandleFunc("GET /version", s.handleVersion)
		m.HandleFunc("GET /get_model_info", s.ready(s.handleSGLangModelInfo))
		m.HandleFunc("GET /get_server_info", s.ready(s.handleSGLangServerInfo))
		m.HandleFunc("POST /tokenize", s.ready(s.handleTokenizeSGLang))
		m.HandleFunc("POST /flush_cache", s.handleFlushCache)
		m.HandleFunc("GET /flush_cache", s.handleFlushCache)
	},
	rawModels: true,
	modelEntry: func(s *Server, m string) any {
		return map[string]any{"id": m, "object": "model", "created": s.created, "owned_by": "sglang", "root": m,
			"max_model_len": s.cfg.MaxModelLen}
	},
	lookupModel: serveAnyModel,
	// A prompt of MaxModelLen tokens or more is refused.
	checkPrompt: func(s *Server, p *genPlan, _ *genRequest, _ string) *apiErr {
		if n, m := len(p.promptIDs), s.cfg.MaxModelLen; n >= m {
			return &apiErr{status: http.StatusBadRequest, typ: "BadRequestError",
				msg: fmt.Sprintf("The input (%d tokens) is longer than the model's context length (%d tokens).", n, m)}
		}
		return nil
	},
	// SGLang refuses prompt + max_tokens >= context.
	chatRoom: roomBelow,
	checkContext: func(s *Server, prompt int, maxTokens *int) *apiErr {
		if m, total := s.cfg.MaxModelLen, prompt+*maxTokens; total >= m {
			return &apiErr{status: http.StatusBadRequest, typ: "BadRequestError",
				msg: fmt.Sprintf("Requested token count exceeds the model's maximum context length of %d tokens. You requested a total of %d tokens: %d tokens from the input messages and %d tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.", m, total, prompt, *maxTokens)}
		}
		return nil
	},
	writeErr: writeVLLMErr,
	notFound: fastAPINotFound,
}
