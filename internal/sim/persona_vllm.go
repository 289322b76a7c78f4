package sim

import (
	"fmt"
	"net/http"
)

// vllmPersona is vLLM's OpenAI-compatible server (FastAPI on uvicorn).
var vllmPersona = persona{
	name:         PersonaVLLM,
	version:      "0.11.0",
	metrics:      MetricsVLLM,
	subword:      true,
	serverHeader: "uvicorn",
	cache:        cacheBlocks,
	usageCached:  cachedAlways,
	streamType:   "text/event-stream; charset=utf-8",
	emptyHealth:  true,
	badJSON:      apiErr{status: http.StatusBadRequest, typ: "BadRequestError", msg: "invalid JSON body: "},
	routes: func(s *Server) {
		s.openAIRoutes()
		m := s.mux
		m.HandleFunc("GET /health", s.handleHealth)
		m.HandleFunc("GET /ping", s.handleHealth)
		m.HandleFunc("POST /ping", s.handleHealth)
		m.HandleFunc("GET /version", s.handleVersion)
		m.HandleFunc("POST /tokenize", s.ready(s.handleTokenizeVLLM))
		m.HandleFunc("POST /detokenize", s.ready(s.handleDetokenizeVLLM))
	},
	rawModels: true,
	modelEntry: func(s *Server, m string) any {
		return map[string]any{
			"id": m, "object": "model", "created": s.created, "owned_by": "vllm", "root": m, "parent": nil,
			"max_model_len": s.cfg.MaxModelLen,
			"permission": []any{map[string]any{
				"id": fmt.Sprintf("modelperm-%016x", mix(fnv1a(m))), "object": "model_permission", "created": s.created,
				"allow_create_engine": false, "allow_sampling": true, "allow_logprobs": true,
				"allow_search_indices": false, "allow_view": true, "allow_fine_tuning": false,
				"organization": "*", "group": nil, "is_blocking": false,
			}},
		}
	},
	lookupModel: func(s *Server, name string) (string, *apiErr) {
		if name == "" {
			return s.cfg.Models[0], nil
		}
		if s.models[name] {
			return name, nil
		}
		return "", &apiErr{status: http.StatusNotFound, typ: "NotFoundError", param: "model",
			msg: fmt.Sprintf("The model `%s` does not exist.", name)}
	},
	// A chat request without max_tokens whose prompt leaves no room.
	checkPrompt: func(s *Server, p *genPlan, req *genRequest, endpoint string) *apiErr {
		n, m := len(p.promptIDs), s.cfg.MaxModelLen
		if endpoint == epChat && req.MaxTokens == nil && req.MaxCompletionTokens == nil && n >= m {
			return &apiErr{status: http.StatusBadRequest, typ: "BadRequestError",
				msg: fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens in the messages, Please reduce the length of the messages.", m, n)}
		}
		return nil
	},
	checkContext: checkTotal,
	writeErr:     writeVLLMErr,
	notFound:     fastAPINotFound,
}
