package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// vllmPersona is vLLM's OpenAI-compatible server (FastAPI on uvicorn).
var vllmPersona = persona{
	reasoningField: FieldReasoningContent,
	name:           PersonaVLLM,
	version:        "0.11.0",
	metrics:        MetricsVLLM,
	subword:        true,
	serverHeader:   "uvicorn",
	cache:          cacheBlocks,
	usageCached:    cachedAlways,
	streamType:     "text/event-stream; charset=utf-8",
	emptyHealth:    true,
	badJSON:        apiErr{status: http.StatusBadRequest, typ: "BadRequestError", msg: "invalid JSON body: "},
	routes: func(s *Server) {
		s.openAIRoutes()
		m := s.mux
		m.HandleFunc("GET /health", s.handleHealth)
		m.HandleFunc("GET /ping", s.handleHealth)
		m.HandleFunc("POST /ping", s.handleHealth)
		m.HandleFunc("GET /version", s.handleVersion)
		m.HandleFunc("POST /tokenize", s.ready(s.handleTokenizeVLLM))
		m.HandleFunc("POST /detokenize", s.ready(s.handleDetokenizeVLLM))
		s.vllmHookRoutes()
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

	// The other APIs: serving_responses.py, the Anthropic /v1/messages
	// entrypoint and /v1/rerank (score models).
	apis: []string{epResponses, epMessages, epRerank},
}

// --- vLLM's endpoints ---

type vllmTokenizeRequest struct {
	Model               string            `json:"model"`
	Prompt              *string           `json:"prompt"`
	Messages            []json.RawMessage `json:"messages"`
	AddSpecialTokens    *bool             `json:"add_special_tokens"`
	AddGenerationPrompt *bool             `json:"add_generation_prompt"`
	ReturnTokenStrs     bool              `json:"return_token_strs"`
}

type vllmTokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int    `json:"tokens"`
	TokenStrs   []string `json:"token_strs"`
}

// handleTokenizeVLLM is vLLM's /tokenize: a prompt gets BOS unless
// add_special_tokens is false; messages are rendered by the chat template
// (which starts with BOS), add_special_tokens defaulting to false there.
func (s *Server) handleTokenizeVLLM(w http.ResponseWriter, r *http.Request) {
	var req vllmTokenizeRequest
	if !s.decode(w, r, &req) {
		return
	}
	if _, ok := s.resolveModel(w, req.Model); !ok {
		return
	}
	var ids []int
	var strs []string
	switch {
	case req.Prompt != nil && req.Messages != nil:
		s.writeErr(w, http.StatusBadRequest, "BadRequestError", "give either prompt or messages, not both")
		return
	case req.Prompt != nil:
		ids, strs = tokenizeSubword(s.persona, *req.Prompt, boolOr(req.AddSpecialTokens, true), req.ReturnTokenStrs)
	case req.Messages != nil:
		msgs, err := parseMessages(req.Messages)
		if err != nil {
			s.writeErr(w, http.StatusBadRequest, "BadRequestError", err.Error())
			return
		}
		ids, strs = tokenizeSubword(s.persona, renderChatOpts(msgs, boolOr(req.AddGenerationPrompt, true)), true, req.ReturnTokenStrs)
		if boolOr(req.AddSpecialTokens, false) {
			ids = append([]int{BOSToken}, ids...)
			if req.ReturnTokenStrs {
				strs = append([]string{bosText}, strs...)
			}
		}
	default:
		s.writeErr(w, http.StatusBadRequest, "BadRequestError", "prompt or messages is required")
		return
	}
	for i, p := range strs {
		if strings.HasPrefix(p, " ") {
			strs[i] = "▁" + p[1:] // the tokenizer's own spelling of a word start
		}
	}
	writeRawJSON(w, http.StatusOK, vllmTokenizeResponse{Count: len(ids), MaxModelLen: s.cfg.MaxModelLen, Tokens: ids, TokenStrs: strs})
}

func (s *Server) handleDetokenizeVLLM(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Tokens []int  `json:"tokens"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	if _, ok := s.resolveModel(w, req.Model); !ok {
		return
	}
	writeRawJSON(w, http.StatusOK, map[string]string{"prompt": s.persona.detokenize(req.Tokens)})
}

// vllmError is vLLM's (and SGLang's) ErrorResponse, in its field order.
type vllmError struct {
	Object  string  `json:"object"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// writeVLLMErr writes vLLM's (and SGLang's) ErrorResponse.
func writeVLLMErr(w http.ResponseWriter, e *apiErr) {
	var param *string
	if e.param != "" {
		param = &e.param
	}
	writeRawJSON(w, e.status, vllmError{Object: "error", Message: e.msg, Type: e.typ, Param: param, Code: e.status})
}

// writeVLLMMetrics writes vLLM V1's names, or with legacy the spellings
// they replaced (gpu_cache_usage_perc, gpu_prefix_cache_*,
// time_per_output_token_seconds: removed in vLLM 0.11/0.12), never both,
// so that a scraper is tested against each spelling on its own.
func writeVLLMMetrics(bw io.Writer, g gauges, m *metrics, lbls []string, legacy bool) {
	gauge(bw, "vllm:num_requests_running", "Number of requests in model execution batches.", lbls, float64(g.running))
	gauge(bw, "vllm:num_requests_waiting", "Number of requests waiting to be processed.", lbls, float64(g.waiting))
	if legacy {
		gauge(bw, "vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.", lbls, g.kvUsage)
	} else {
		gauge(bw, "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", lbls, g.kvUsage)
	}
	counter(bw, "vllm:prompt_tokens_total", "Number of prefill tokens processed.", lbls, float64(m.promptTokens.Load()))
	counter(bw, "vllm:generation_tokens_total", "Number of generation tokens processed.", lbls, float64(m.generationTokens.Load()))
	counter(bw, "vllm:num_preemptions_total", "Cumulative number of preemptions from the engine.", lbls, float64(m.preemptions.Load()))
	prefix := "vllm:prefix_cache_"
	if legacy {
		prefix = "vllm:gpu_prefix_cache_"
	}
	counter(bw, prefix+"queries_total", "Prefix cache queries, in tokens.", lbls, float64(m.prefixQueries.Load()))
	counter(bw, prefix+"hits_total", "Prefix cache hits, in tokens.", lbls, float64(m.prefixHits.Load()))
	fmt.Fprintf(bw, "# HELP vllm:request_success_total Count of successfully processed requests.\n# TYPE vllm:request_success_total counter\n")
	for _, lbl := range lbls {
		fmt.Fprintf(bw, "vllm:request_success_total{%s,finished_reason=\"stop\"} %d\n", lbl, m.successStop.Load())
		fmt.Fprintf(bw, "vllm:request_success_total{%s,finished_reason=\"length\"} %d\n", lbl, m.successLength.Load())
		fmt.Fprintf(bw, "vllm:request_success_total{%s,finished_reason=\"abort\"} %d\n", lbl, m.aborted.Load())
	}
	hist(bw, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", lbls, m.ttft)
	if legacy {
		hist(bw, "vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.", lbls, m.itl)
	} else {
		hist(bw, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", lbls, m.itl)
	}
	hist(bw, "vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", lbls, m.queue)
	hist(bw, "vllm:e2e_request_latency_seconds", "Histogram of end to end request latency in seconds.", lbls, m.e2e)
}
