package sim

import (
	"fmt"
	"io"
	"net/http"
)

// sglangPersona is SGLang's server (FastAPI on uvicorn, vLLM's error
// shape, a radix prefix cache).
var sglangPersona = persona{
	reasoningField: FieldReasoningContent,
	name:           PersonaSGLang,
	version:        "0.5.2",
	metrics:        MetricsSGLang,
	subword:        true,
	serverHeader:   "uvicorn",
	cache:          cacheRadix,
	usageCached:    cachedAlways,
	streamType:     "text/event-stream; charset=utf-8",
	emptyHealth:    true,
	badJSON:        apiErr{status: http.StatusBadRequest, typ: "BadRequestError", msg: "invalid JSON body: "},
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
		s.sglangProfileRoutes()
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

	// The other APIs: /v1/responses and /v1/rerank.
	apis: []string{epResponses, epRerank},
}

// --- SGLang's endpoints ---

type sglangTokenizeResponse struct {
	Tokens      []int `json:"tokens"`
	Count       int   `json:"count"`
	MaxModelLen int   `json:"max_model_len"`
}

func (s *Server) handleTokenizeSGLang(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model            string  `json:"model"`
		Prompt           *string `json:"prompt"`
		AddSpecialTokens *bool   `json:"add_special_tokens"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	if req.Prompt == nil {
		s.writeErr(w, http.StatusBadRequest, "BadRequestError", "prompt is required")
		return
	}
	ids, _ := tokenizeSubword(s.persona, *req.Prompt, boolOr(req.AddSpecialTokens, true), false)
	writeRawJSON(w, http.StatusOK, sglangTokenizeResponse{Tokens: ids, Count: len(ids), MaxModelLen: s.cfg.MaxModelLen})
}

func (s *Server) handleSGLangModelInfo(w http.ResponseWriter, r *http.Request) {
	writeRawJSON(w, http.StatusOK, map[string]any{
		"model_path": s.cfg.Models[0], "tokenizer_path": s.cfg.Models[0], "is_generation": true,
		"preferred_sampling_params": nil, "weight_version": "default", "has_chat_template": true,
	})
}

// handleSGLangServerInfo is SGLang's /get_server_info: its server args,
// with context_length, and the version.
func (s *Server) handleSGLangServerInfo(w http.ResponseWriter, r *http.Request) {
	maxRunning, kv, chunk := s.cfg.Engine.MaxNumSeqs, s.cfg.Engine.KVCacheTokens, s.cfg.Engine.MaxBatchedTokens
	writeRawJSON(w, http.StatusOK, map[string]any{
		"model_path": s.cfg.Models[0], "tokenizer_path": s.cfg.Models[0], "served_model_name": s.cfg.Models[0],
		"context_length": s.cfg.MaxModelLen, "max_running_requests": maxRunning, "max_total_tokens": kv,
		"chunked_prefill_size": chunk, "page_size": 1, "tp_size": 1, "dp_size": 1,
		"disable_radix_cache": !(s.cfg.PromptCache || (s.engine != nil && s.cfg.Engine.PrefixCache)),
		"schedule_policy":     "fcfs", "random_seed": s.cfg.Seed, "stream_interval": s.cfg.TokensPerChunk,
		"max_total_num_tokens": kv, "max_req_input_len": s.cfg.MaxModelLen - 1,
		"internal_states": []any{map[string]any{"last_gen_throughput": 0.0}},
		"version":         s.version(),
	})
}

// handleFlushCache is SGLang's /flush_cache: it empties the prompt cache.
func (s *Server) handleFlushCache(w http.ResponseWriter, r *http.Request) {
	s.hooks.resets.Add(1)
	s.flushPromptCache()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n"))
}

// flushPromptCache empties fixed mode's prompt cache and the engine's
// prefix cache.
func (s *Server) flushPromptCache() {
	if s.pcache != nil {
		s.pcache.reset()
	}
	s.mcaches.reset()
	if s.engine != nil {
		s.engine.flushPrefix()
	}
}

// writeSGLangMetrics writes SGLang's names (python/sglang/srt/metrics).
func writeSGLangMetrics(w io.Writer, g gauges, m *metrics, lbls []string) {
	gt, ds := float64(m.generationTokens.Load()), float64(m.decodeNs.Load())/1e9
	hitRate := 0.0
	if q := m.prefixQueries.Load(); q > 0 {
		hitRate = float64(m.prefixHits.Load()) / float64(q)
	}
	gauge(w, "sglang:num_running_reqs", "The number of running requests.", lbls, float64(g.running))
	gauge(w, "sglang:num_queue_reqs", "The number of requests in the waiting queue.", lbls, float64(g.waiting))
	gauge(w, "sglang:num_used_tokens", "The number of used tokens.", lbls, float64(g.kvTokens))
	gauge(w, "sglang:token_usage", "The token usage.", lbls, g.kvUsage)
	gauge(w, "sglang:cache_hit_rate", "The prefix cache hit rate.", lbls, hitRate)
	gauge(w, "sglang:gen_throughput", "The generation throughput (token/s).", lbls, rate(gt, ds))
	gauge(w, "sglang:num_retracted_reqs", "The number of retracted requests.", lbls, float64(m.preemptions.Load()))
	counter(w, "sglang:prompt_tokens_total", "Number of prefill tokens processed.", lbls, float64(m.promptTokens.Load()))
	counter(w, "sglang:generation_tokens_total", "Number of generation tokens processed.", lbls, gt)
	counter(w, "sglang:cached_tokens_total", "Number of cached prompt tokens.", lbls, float64(m.prefixHits.Load()))
	counter(w, "sglang:num_requests_total", "Number of requests processed.", lbls,
		float64(m.successStop.Load()+m.successLength.Load()+m.aborted.Load()))
	hist(w, "sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", lbls, m.ttft)
	hist(w, "sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", lbls, m.itl)
	hist(w, "sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", lbls, m.e2e)
}
