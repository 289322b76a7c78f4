package sim

import "net/http"

// llamaServerPersona is llama.cpp's llama-server: its own routes beside
// the /v1 ones, slots with a prompt each, a 503 while loading, the
// connection closed after every stream.
var llamaServerPersona = persona{
	name:             PersonaLlamaServer,
	version:          "b6500-sim",
	metrics:          MetricsLlamaCpp,
	closeAfterStream: true,
	embedsOnRequest:  true,
	subword:          true,
	serverHeader:     "llama.cpp",
	cache:            cacheSlots,
	hostCache:        true,
	timings:          true,
	streamType:       "text/event-stream",
	// Its JSON parser's exception is a 500.
	badJSON: apiErr{status: http.StatusInternalServerError, typ: "server_error", msg: "[json.exception.parse_error.101] parse error: "},
	routes: func(s *Server) {
		s.openAIRoutes()
		m := s.mux
		m.HandleFunc("GET /health", s.handleHealth)
		m.HandleFunc("GET /v1/health", s.handleHealth)
		m.HandleFunc("GET /models", s.ready(s.handleModels))
		m.HandleFunc("POST /completions", s.gen(epCompletions))
		m.HandleFunc("POST /chat/completions", s.gen(epChat))
		m.HandleFunc("GET /props", s.ready(s.handleProps))
		m.HandleFunc("GET /slots", s.ready(s.handleSlots))
		m.HandleFunc("POST /tokenize", s.ready(s.handleTokenizeLlama))
		m.HandleFunc("POST /detokenize", s.ready(s.handleDetokenizeLlama))
		m.HandleFunc("POST /apply-template", s.ready(s.handleApplyTemplate))
	},
	rawModels: true,
	// No max_model_len: the per-slot context is meta.n_ctx (and /props).
	modelEntry: func(s *Server, m string) any {
		return map[string]any{"id": m, "object": "model", "created": s.created, "owned_by": "llamacpp",
			"meta": map[string]any{
				"vocab_type": 1, "n_vocab": VocabSize, "n_ctx_train": s.trainCtx(), "n_ctx": s.cfg.MaxModelLen,
				"n_embd": simEmbd, "n_params": simParams, "size": simSize,
			}}
	},
	lookupModel: serveAnyModel,
	// A prompt of MaxModelLen tokens or more is refused.
	checkPrompt: func(s *Server, p *genPlan, _ *genRequest, _ string) *apiErr {
		if n, m := len(p.promptIDs), s.cfg.MaxModelLen; n >= m {
			return &apiErr{status: http.StatusBadRequest, typ: "exceed_context_size_error",
				msg: "the request exceeds the available context size, try increasing it", nPrompt: n, nCtx: m}
		}
		return nil
	},
	// It stops at the context instead.
	chatRoom: roomIgnored,
	// It generates until its context is full: max_tokens is cut to the
	// room left, finish_reason "length".
	checkContext: func(s *Server, prompt int, maxTokens *int) *apiErr {
		*maxTokens = min(*maxTokens, s.cfg.MaxModelLen-prompt)
		return nil
	},
	// llama.cpp's format_error_response; nlohmann::json sorts the keys,
	// as encoding/json does for a map.
	writeErr: func(w http.ResponseWriter, e *apiErr) {
		body := map[string]any{"code": e.status, "message": e.msg, "type": llamaErrorType(e)}
		if e.typ == "exceed_context_size_error" {
			body["n_prompt_tokens"], body["n_ctx"] = e.nPrompt, e.nCtx
		}
		writeRawJSON(w, e.status, map[string]any{"error": body})
	},
	notFound: func(s *Server, w http.ResponseWriter, _ *http.Request) {
		s.writeErr(w, http.StatusNotFound, "not_found_error", "File Not Found")
	},
}
